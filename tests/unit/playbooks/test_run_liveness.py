"""Whether a run still goes, as status.yml and babysit.yml ask it: the status probe
(playbooks/templates/status_probe.py.j2) against run records made here, with real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROBE = REPO / "playbooks" / "templates" / "status_probe.py.j2"
RUN = "20261125T120000Z-ab12"
HOST = "pod-w0"


def start_time(pid: int) -> str:
    """Field 22 of /proc/PID/stat, as the run wrapper records it."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19]


def boot() -> str:
    """This boot as the run wrapper records it: the kernel's boot id and process 1's start."""
    kernel = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{kernel}:{start_time(1)}"


def write(tmp_path: Path, rc: int | None = None, **record) -> Path:
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True, exist_ok=True)
    data = {"run_id": RUN, "host": HOST, "cmd": "python train.py", "detached": True}
    data.update(record)
    (folder / f"{HOST}.json").write_text(json.dumps(data))
    if rc is not None:
        (folder / f"{HOST}.rc").write_text(f"{rc}\n")
    return folder


def watch(tmp_path: Path, wait: float = 0) -> dict:
    args = [sys.executable, "-", "--host", HOST, "--runs-dir", str(tmp_path / "runs"),
            "--watch", RUN, "--wait", str(wait)]  # fmt: skip
    done = subprocess.run(args, input=PROBE.read_text(), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.fixture
def process():
    live = subprocess.Popen(["sleep", "60"])
    yield live
    live.kill()
    live.wait()


def test_the_same_process_runs(tmp_path: Path, process):
    write(tmp_path, pid=process.pid, pid_start=int(start_time(process.pid)), boot=boot())
    assert watch(tmp_path) == {"run_id": RUN, "state": "running", "rc": None}


def test_an_old_record_without_start_time_trusts_the_pid(tmp_path: Path, process):
    write(tmp_path, pid=process.pid)
    assert watch(tmp_path)["state"] == "running"


@pytest.mark.parametrize(
    "change",
    [
        # The pid now belongs to another process (a restarted container numbers from 1 again).
        {"pid_start": 1},
        # The worker booted again since the run started (or its container restarted).
        {"boot": "00000000-0000-0000-0000-000000000000:1"},
    ],
)
def test_another_process_with_the_runs_pid_is_not_the_run(tmp_path: Path, process, change):
    record = {"pid": process.pid, "pid_start": int(start_time(process.pid)), "boot": boot()}
    write(tmp_path, **{**record, **change})
    assert watch(tmp_path)["state"] == "gone"


def test_a_killed_run_is_gone_and_an_ended_one_exited(tmp_path: Path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    write(tmp_path, pid=dead.pid, pid_start=1)
    assert watch(tmp_path)["state"] == "gone"
    write(tmp_path, rc=7, pid=dead.pid)
    assert watch(tmp_path) == {"run_id": RUN, "state": "exited", "rc": 7}


def test_no_record_is_missing(tmp_path: Path):
    (tmp_path / "runs").mkdir()
    assert watch(tmp_path)["state"] == "missing"


def test_watch_waits_for_the_exit_code(tmp_path: Path, process):
    folder = write(tmp_path, pid=process.pid, pid_start=int(start_time(process.pid)), boot=boot())

    def finish() -> None:
        time.sleep(1.5)
        (folder / f"{HOST}.rc").write_text("0\n")

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        got = watch(tmp_path, wait=20)
    finally:
        writer.join()
    assert got == {"run_id": RUN, "state": "exited", "rc": 0}


@pytest.mark.parametrize(
    ("rc", "same_boot", "state"),
    [
        # A reboot's shutdown signalled the run, and the wrapper wrote 143 as it went down.
        (143, False, "gone"),
        (137, False, "gone"),
        # The run ended by itself before the reboot: its exit code stands.
        (0, False, "exited"),
        (7, False, "exited"),
        # Signalled in this boot (a user's kill): the run ended, with that code.
        (143, True, "exited"),
    ],
)
def test_an_exit_code_written_by_a_shutdown_is_not_the_runs_end(tmp_path, rc, same_boot, state):
    write(tmp_path, rc=rc, pid=2**22 + 7, boot=boot() if same_boot else "another-boot:42")
    assert watch(tmp_path)["state"] == state
