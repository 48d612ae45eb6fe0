"""babysit.yml stopped with Ctrl-C after a recovery, and run again, goes on with the same run.

One v4-8 node (one worker) from day_two_pod.provisioned(), reached over SSH as ``tpu``. A
detached run sleeps while a marker file of the first worker is there, and then says ``done``.
babysit.yml watches it; the emulator's admin API preempts the node (its container is killed);
babysit.yml recreates it (recover.yml, bootstrapping the libtpu role alone, as in
test_lifecycle_day_two.py) and gets SIGINT, as Ctrl-C sends it, when the run is about to be started
again. That is the moment a stop loses the most: the old worker and its run records are gone,
and the new worker has none. Run again from the same folder, babysit.yml finds the run in the
state it keeps next to its log, starts the command again (the new worker has no marker: the
command ends at once with exit code 0) and reports the run completed. Its one log holds the
events of both babysitters.

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.day_two_pod import HOME, VENV, Pod, docker_unavailable, provisioned
from tests.integration.lifecycle_support import BIN, PROJECT, REPO, ZONE, extra_vars

NODE = "sit"
WORKER = f"{NODE}-w0"
EMULATOR_ID = f"bs{os.getpid()}"
MARKER = f"{HOME}/keep-sleeping"
# The libtpu role alone on the recreated node (see test_lifecycle_day_two.py's ONLY_LIBTPU).
ONLY_LIBTPU = ("--skip-tags", "base,python,framework,tcmalloc,remote_shell,nfs,storage")
# Where babysit.yml has recovered the node and is about to start the run again.
BEFORE_RESTART = "PLAY [Run | check the request]"


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_babysit_resume: {reason}")
        pytest.skip(reason)
    with provisioned(tmp_path_factory.mktemp("sit"), NODE, "v4-8", EMULATOR_ID) as made:
        yield made


def babysit(pod: Pod, logs: Path) -> list[str]:
    variables = {
        "tpu_babysit_interval": 2,
        "tpu_babysit_log_dir": str(logs),
        "tpu_run_start_delay": 1,
        "tpu_recover_known_hosts": str(pod.tmp / "known_hosts"),
        "tpu_recover_poll_interval": 0.5,
        "tpu_recover_ssh_timeout": 180,
    }
    return [
        str(BIN / "ansible-playbook"),
        "-i",
        str(REPO / "inventories" / "demo"),
        str(REPO / "playbooks" / "babysit.yml"),
        *ONLY_LIBTPU,
        *extra_vars(variables),
    ]


def wait_for(path: Path, text: str, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        assert proc.poll() is None, f"babysit.yml ended early:\n{path.read_text()[-4000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} within {seconds} s:\n{path.read_text()[-4000:]}")


def ctrl_c(proc: subprocess.Popen) -> None:
    """Ctrl-C as a terminal sends it, to the whole process group (ansible-playbook, its
    workers, their ssh), and once more when the first has not ended it within 30 s, as a user
    presses it again: Ansible's handler of the first SIGINT puts back the default one."""
    for attempt in (1, 2):
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30 if attempt == 1 else 120)
            return
        except subprocess.TimeoutExpired:
            print(f"babysit.yml still runs 30 s after Ctrl-C number {attempt}")
    raise AssertionError("babysit.yml did not stop after Ctrl-C twice")


def test_a_babysitter_stopped_after_a_recovery_goes_on_when_run_again(
    pod: Pod, tmp_path: Path
) -> None:
    assert pod.emulator is not None
    logs = tmp_path / "logs"
    pod.shell(f"touch {MARKER}")
    started = pod.play(
        "run.yml",
        *extra_vars(
            {
                "cmd": f"test -f {MARKER} && sleep 600; echo done",
                "tpu_run_detach": True,
                "tpu_run_start_delay": 1,
            }
        ),
    )
    assert started.returncode == 0, started.tail(60)
    first = re.search(r"run (\d{8}T\d{6}Z-[0-9a-f]{4}), logs in", started.stdout)
    assert first, started.tail(60)
    run_id = first[1]

    out = tmp_path / "babysit-1.out"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            babysit(pod, logs),
            cwd=REPO,
            env=pod.env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(out, "PLAY [Babysit | wait for the run", proc, 120)
        pod.emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:preempt")
        wait_for(out, BEFORE_RESTART, proc, 420)
        ctrl_c(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = out.read_text()
    assert proc.returncode != 0, said[-3000:]
    assert f"recover: {NODE} PREEMPTED" in said, said[-3000:]
    # the recreated worker has no record of the run: nothing was started again
    runs = pod.shell(f"ls {HOME}/cloudtpu-runs 2>/dev/null | wc -l")
    assert runs == {WORKER: "0"}, (runs, said[-3000:])
    kept = logs / f"{run_id}.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    record = json.loads(kept.read_text())
    assert (record["run_id"], record["over"], record["hosts"]) == (run_id, False, [WORKER])

    # The recovery bootstrapped the libtpu role alone; the venv without packages that
    # provisioned() made on the first worker is made on the new one too (see day_two_pod.py why
    # that is enough for run.yml), as the python role would with the whole bootstrap.
    pod.shell(f"python3 -m venv --without-pip {VENV}")
    again = subprocess.run(
        babysit(pod, logs),
        cwd=REPO,
        env=pod.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = again.stdout[-6000:] + again.stderr[-2000:]
    assert again.returncode == 0, output
    log = (logs / f"{run_id}.log").read_text()
    assert f"watching run {run_id}" in log and f"recover: {NODE} PREEMPTED" in log, log
    assert f"resuming run {run_id} on {WORKER}" in log, log
    restarted = re.findall(r"restarted: run (\S+) continues run " + run_id, log)
    assert len(restarted) == 1, log
    outputs = pod.shell(f"cat {HOME}/cloudtpu-runs/{restarted[0]}/{WORKER}.log")
    assert outputs == {WORKER: "done"}, outputs
    assert json.loads(kept.read_text())["over"] is True, "a completed watch is not resumed again"
