"""The status probe (playbooks/templates/status_probe.py.j2): the program status.yml runs on
each worker, run here as status.yml runs it (the program on standard input) against folders made
here: run records, tools, device files and tpu-info's answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.status_table import status_table

from tests.unit.playbooks.test_status_table import report

REPO = Path(__file__).resolve().parents[3]
PROBE = REPO / "playbooks" / "templates" / "status_probe.py.j2"


def run_probe(
    tmp_path: Path, host: str = "pod-w0", venv: Path | None = None, glob_: str = ""
) -> dict:
    args = [
        sys.executable, "-", "--host", host, "--runs-dir", str(tmp_path / "runs"),
        "--venv", str(venv or tmp_path / "venv"),
        "--device-glob", glob_ or str(tmp_path / "dev" / "accel*"),
        "--unlock", str(tmp_path / "bin" / "tpu-unlock"),
    ]  # fmt: skip
    done = subprocess.run(args, input=PROBE.read_text(), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def write_run(tmp_path: Path, run_id: str, host: str, rc: int | None = None, **record) -> None:
    folder = tmp_path / "runs" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    data = {"run_id": run_id, "host": host, "cmd": "python train.py", "detached": True,
            "pid": None, "started": 1763900000, "workdir": "/home/u"}  # fmt: skip
    data.update(record)
    (folder / f"{host}.json").write_text(json.dumps(data))
    if rc is not None:
        (folder / f"{host}.rc").write_text(f"{rc}\n")


def test_probe_reads_the_run_records(tmp_path: Path):
    live = subprocess.Popen(["sleep", "60"])
    try:
        write_run(tmp_path, "20261123T143000Z-ab12", "pod-w0", pid=live.pid)
        write_run(tmp_path, "20261122T143000Z-cd34", "pod-w0", rc=0, pid=1, cmd="script: eval.sh")
        write_run(tmp_path, "20261121T143000Z-ef56", "pod-w0", pid=2**22 + 7)
        write_run(tmp_path, "20261120T143000Z-0000", "pod-w0", detached=False, pid=None)
        write_run(tmp_path, "20261123T143000Z-ab12", "pod-w1", pid=live.pid)
        found = run_probe(tmp_path)
    finally:
        live.kill()
        live.wait()
    runs = found["runs"]
    assert [r["run_id"] for r in runs] == [
        "20261123T143000Z-ab12", "20261122T143000Z-cd34", "20261121T143000Z-ef56"
    ], runs  # fmt: skip
    assert [r["state"] for r in runs] == ["running", "exited", "gone"], runs
    assert runs[1]["rc"] == 0 and runs[1]["cmd"] == "script: eval.sh", runs
    assert isinstance(found["uptime"], float) and found["uptime"] > 0


def test_probe_without_tools_or_devices_says_why(tmp_path: Path):
    found = run_probe(tmp_path)
    assert found["runs"] == [] and found["devices"] == []
    assert "tpu-unlock is not installed" in found["locks"]["error"]
    assert found["tpu_info"] == {
        "shown": False,
        "reason": f"tpu-info is not installed in {tmp_path / 'venv'} (the framework role installs"
        " it: tpu_framework_tpu_info: true)",
    }


def write_tool(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{text}\n")
    path.chmod(0o755)


def test_probe_runs_tpu_unlock_dry_run_and_tpu_info(tmp_path: Path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "accel0").write_text("")
    log = tmp_path / "unlock-args"
    holders = '{"holders": [{"pid": 5, "user": "ana", "command": "python"}], "exit_code": 3}'
    write_tool(tmp_path / "bin" / "tpu-unlock", f"echo \"$@\" > {log}; echo '{holders}'; exit 3")
    write_tool(tmp_path / "venv" / "bin" / "tpu-info", "echo 'chip 0 busy'")
    found = run_probe(tmp_path)
    assert log.read_text().split()[:2] == ["--dry-run", "--json"]
    assert found["locks"]["holders"][0]["user"] == "ana" and found["locks"]["rc"] == 3
    assert found["devices"] == [str(tmp_path / "dev" / "accel0")]
    assert found["tpu_info"] == {"shown": True, "output": "chip 0 busy"}


# What tpu-info 0.14 prints where the machine has no TPU chip (and rc 0); without libtpu in the
# venv, a warning panel comes first and a line on standard error.
NO_CHIP = (
    "echo '| Compatibility Warning |'; echo 'ERROR: libtpu not found.' >&2; "
    "echo 'No TPU chips found.'"
)


def test_probe_says_no_tpu_device_where_tpu_info_finds_no_chip(tmp_path: Path):
    write_tool(tmp_path / "venv" / "bin" / "tpu-info", NO_CHIP)
    found = run_probe(tmp_path)
    assert found["tpu_info"] == {
        "shown": False,
        "no_device": True,
        "reason": "tpu-info: No TPU chips found.",
    }
    lines = status_table([], [report("pod-w0", 0, probe=found)])
    assert "      tpu-info: no TPU device (tpu-info: No TPU chips found.)" in lines, lines


def test_probe_with_device_files_but_no_chip_is_not_called_no_device(tmp_path: Path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "accel0").write_text("")
    write_tool(tmp_path / "venv" / "bin" / "tpu-info", NO_CHIP)
    found = run_probe(tmp_path)["tpu_info"]
    assert found == {
        "shown": False,
        "reason": "tpu-info found no TPU chip, though device files exist: "
        + str(tmp_path / "dev" / "accel0"),
    }


def test_probe_shows_tpu_info_that_fails(tmp_path: Path):
    write_tool(
        tmp_path / "venv" / "bin" / "tpu-info", "echo 'Traceback' >&2; echo 'boom' >&2; exit 2"
    )
    found = run_probe(tmp_path)["tpu_info"]
    assert found == {"shown": False, "reason": "tpu-info failed (rc 2): boom"}
    lines = status_table([], [report("pod-w0", 0, probe={"tpu_info": found})])
    assert "      tpu-info: not shown, tpu-info failed (rc 2): boom" in lines, lines


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to the venv's owner needs root")
def test_probe_runs_tpu_info_as_the_venv_owner_not_root(tmp_path: Path):
    # pytest's own folders are root's alone: the venv's owner (nobody) must reach the tool.
    outside = Path(tempfile.mkdtemp(prefix="status-probe-"))
    try:
        outside.chmod(0o755)
        venv = outside / "venv"
        write_tool(venv / "bin" / "tpu-info", 'echo "uid $(id -u) home $HOME in $(pwd)"')
        os.chown(venv, 65534, 65534)
        found = run_probe(tmp_path, venv=venv)["tpu_info"]
    finally:
        shutil.rmtree(outside)
    assert found["shown"] and found["output"].startswith("uid 65534 home "), found
    assert found["output"].endswith(" in /"), found


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_probe_program_is_plain_python(tmp_path: Path):
    # status.yml sends the file as it is: no template markers in it.
    text = PROBE.read_text()
    assert "{{" not in text and "{%" not in text
