"""The README's "Babysitting a long run" journey, run as a user runs it: one worker (v4-8) from
the emulator, bootstrapped with ``site.yml --tags python,libtpu`` (the venv and the TPU lock
helper: all a run needs, see test_journey_multislice.py), a detached 60-step training script
that checkpoints its step and resumes from it, then ``babysit.yml``, during which the node is
preempted twice and then goes through a maintenance event, and given
``tpu_babysit_teardown=on_success`` deletes the node once the run has completed; then the status
table shows no node and the emulator stops.

Two things come from outside the user's commands, as on Google Cloud:

* the preemptions and the maintenance event: this test asks the emulator's admin API to preempt
  the node (the workers' containers are killed at once), then to simulate a maintenance event
  (the containers restart, their disks stay: the run's process is ended by the shutdown and
  the node comes back READY), from a thread, while the babysit step runs;
* the checkpoint's storage: on Google Cloud the checkpoint lives in a bucket that outlives the
  VMs. The demo's workers have no such storage (a recreated node is new containers), so the test
  copies the checkpoint file out of the killed container and into the new one before the run is
  restarted, with its own hands. It copies the killed run's log out too: a preemption takes the
  log with the disk, and the test checks every step across the three runs. The last two runs'
  folders, on the node babysit.yml deletes at its end, are copied out as soon as the last run
  wrote its exit code (the babysitter takes a few seconds more to see it and delete the node).

Checked: the babysit step succeeds; its log on this machine records two recoveries, the run
found gone after the maintenance event, and three restarts, each with its time; every step is
printed exactly once across the original run and its three continuations; each continuation's
record names the run it continues; the babysitter logged and reported the node's deletion, the
emulator has no node left and no worker container or network. Then the status table lists no
node.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.journey.harness import PROJECT, REPO, ZONE, Journey, journey_pod, ok, run_id

pytestmark = pytest.mark.journey_step

STEPS = ("up", "train", "babysit", "teardown")
NODE = "sit"
HOST = f"{NODE}-w0"
HOME = "/home/tpu"  # the demo's login user is tpu
RUNS_DIR = f"{HOME}/cloudtpu-runs"
CKPT = f"{HOME}/train-step.txt"
STEP_COUNT = 60
PREEMPTIONS = 2


@pytest.fixture(scope="module")
def journey() -> Iterator[Journey]:
    with journey_pod("babysit", steps=STEPS, before_env=(), node_id=NODE) as state:
        yield state


def test_up(journey: Journey) -> None:
    ok(journey.run("up", timeout=900))
    assert journey.node()["state"] == "READY"
    assert journey.worker(0)["state"] == "running"


def test_train(journey: Journey) -> None:
    run = ok(journey.run("train", timeout=300))
    journey.facts["first_run"] = run_id(run)


def _read(container: str, path: str) -> str:
    """A file of a container, running or killed (docker cp reads a stopped one's disk too)."""
    done = subprocess.run(
        ["docker", "cp", f"{container}:{path}", "-"], capture_output=True, check=False
    )
    if done.returncode != 0:
        return ""
    # docker cp to stdout writes a tar stream of the one file
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        member = tar.next()
        handle = tar.extractfile(member) if member else None
        return handle.read().decode() if handle else ""


def _wait(what: str, check, timeout: float = 600) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except AssertionError:
            value = None
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _step(journey: Journey) -> int:
    text = journey.exec(0, f"cat {CKPT} 2>/dev/null || echo 0", check=False).strip()
    return int(text) if text.isdigit() else 0


def _newest_run(journey: Journey) -> str:
    """The newest run folder on worker 0 (run ids sort by their start time)."""
    listed = journey.exec(0, f"ls -1 {RUNS_DIR} 2>/dev/null || true", check=False).split()
    return sorted(name for name in listed if re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{4}", name))[-1]


def _runs_tar(container: str) -> bytes:
    """The runs folder of a container, as the tar stream docker cp writes ('' when it fails)."""
    return subprocess.run(
        ["docker", "cp", f"{container}:{RUNS_DIR}", "-"], capture_output=True, check=False
    ).stdout


def _preempter(journey: Journey, first: str, notes: dict, errors: list) -> None:
    """Preempt the node twice while the babysitter watches and the run makes progress; keep each
    killed run's log and carry the checkpoint to the new worker, as a bucket would. After the
    maintenance event, copy the runs folder out as soon as the last run has its exit code:
    babysit.yml deletes the node (and its disk) once it sees that code."""
    log = REPO / ".cache" / "babysit" / f"{first}.log"
    try:
        _wait("the babysitter's log", log.is_file, timeout=600)
        for number in range(PREEMPTIONS):
            old = journey.worker(0)
            floor = _step(journey) + 3 + 5 * number  # a few steps into each run
            _wait(f"step {floor}", lambda floor=floor: _step(journey) >= floor, timeout=900)
            journey.admin(
                "POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:preempt", body={}
            )
            step = _read(old["name"], CKPT).strip()
            logs = _runs_tar(old["name"])
            notes.setdefault("killed", []).append({"step": step, "runs_tar": logs})

            def fresh(old_id: str = old["id"]) -> bool:
                new = journey.worker(0)
                return new["id"] != old_id and new["state"] == "running"

            _wait("the recreated worker", fresh, timeout=900)
            _wait(
                "the login user on the new worker",
                lambda: (
                    journey.exec(0, f"test -d {HOME} && echo yes", check=False).strip() == "yes"
                ),
                timeout=300,
            )
            journey.exec(0, f"printf %s {step} > {CKPT} && chown tpu: {CKPT} && chmod 0600 {CKPT}")
        # A maintenance event once the second continuation makes progress: the worker restarts
        # with its disk (checkpoint and logs stay), the run's process is gone, no exit code.
        floor = _step(journey) + 8
        _wait(f"step {floor}", lambda: _step(journey) >= floor, timeout=900)
        ended = _newest_run(journey)  # the run the maintenance event ends
        journey.admin(
            "POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:maintenance", body={}
        )
        notes["maintenance"] = True

        def last_done() -> bool:
            newest = _newest_run(journey)
            return newest != ended and journey.exists(0, f"{RUNS_DIR}/{newest}/{HOST}.rc")

        _wait("the last run's exit code", last_done, timeout=900)
        notes["final_runs_tar"] = _runs_tar(journey.worker(0)["name"])
    except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in the thread
        errors.append(exc)


def _steps_in(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^step (\d+)$", text, flags=re.MULTILINE)]


def _files_of(runs_tar: bytes) -> dict[str, str]:
    """The files of a runs folder's tar stream, by '<run id>/<file name>'."""
    found = {}
    with tarfile.open(fileobj=io.BytesIO(runs_tar)) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle:
                path = Path(member.name)
                found[f"{path.parent.name}/{path.name}"] = handle.read().decode()
    return found


def _logs_of(runs_tar: bytes) -> dict[str, str]:
    return {
        name.split("/")[0]: text
        for name, text in _files_of(runs_tar).items()
        if name.endswith(f"/{HOST}.log")
    }


def test_babysit(journey: Journey) -> None:
    first = journey.facts["first_run"]
    notes: dict = {}
    errors: list = []
    thread = threading.Thread(target=_preempter, args=(journey, first, notes, errors), daemon=True)
    thread.start()
    run = journey.run("babysit", timeout=1200)
    thread.join(timeout=60)
    assert not errors, f"the preemptions failed: {errors[0]!r}\n{run.tail()}"
    ok(run)
    assert "the run completed" in run.output, run.tail()

    log = (REPO / ".cache" / "babysit" / f"{first}.log").read_text(encoding="utf-8")
    stamp = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ "
    assert notes.get("maintenance"), notes
    assert len(re.findall(stamp + r"recover: sit PREEMPTED", log, re.MULTILINE)) == 2, log
    assert re.search(stamp + r"restart: the run is gone on sit-w0 without an exit code", log, re.M)
    restarts = re.findall(stamp + r"restarted: run (\S+) continues run (\S+)", log, re.MULTILINE)
    assert len(restarts) == 3, log
    assert restarts[0][1] == first, restarts
    assert restarts[1][1] == restarts[0][0] and restarts[2][1] == restarts[1][0], restarts
    assert re.search(stamp + r"done: the run completed: sit-w0 rc 0$", log, re.MULTILINE), log
    # tpu_babysit_teardown=on_success: the node is deleted, logged and reported
    deleted = f"deleted node {NODE} ({ZONE}) (tpu_babysit_teardown=on_success)"
    assert re.search(stamp + re.escape(f"teardown: {deleted}") + "$", log, re.MULTILINE), log
    assert deleted in run.output, run.tail()
    left = [n["name"] for n in journey.zone()["nodes"]]
    assert not [name for name in left if name.endswith(f"/{NODE}")], left
    assert not any(journey.leftovers().values()), journey.leftovers()

    # every step once, across the run and its three continuations: the preempted runs' logs
    # went with their disks, the others with the deleted node (all kept by the thread)
    assert notes.get("final_runs_tar"), "the last runs' folder was not copied before the deletion"
    final = _files_of(notes["final_runs_tar"])
    logs: dict[str, str] = {}
    for killed in notes["killed"]:
        logs.update(_logs_of(killed["runs_tar"]))
    for run_id_ in (restarts[1][0], restarts[2][0]):
        logs[run_id_] = final[f"{run_id_}/{HOST}.log"]
    assert sorted(logs) == sorted([first, *(new for new, _ in restarts)]), sorted(logs)
    steps = [s for run_id_ in sorted(logs) for s in _steps_in(logs[run_id_])]
    assert steps == list(range(1, STEP_COUNT + 1)), steps
    resumed = [int(k["step"]) for k in notes["killed"]]
    for run_id_, after in zip((restarts[0][0], restarts[1][0]), resumed, strict=True):
        assert f"resuming after step {after}" in logs[run_id_], logs[run_id_]
    # the run the maintenance event ended: signalled by the shutdown (its wrapper wrote 143 as
    # it went down, or nothing), taken as gone, not as failed; its continuation ended with 0
    gone = restarts[1][0]
    rc = final.get(f"{gone}/{HOST}.rc", "none").strip()
    assert rc in ("143", "137", "none"), rc
    last = restarts[2][0]
    record = final[f"{last}/{HOST}.json"]
    assert f'"continues": "{gone}"' in record, record
    assert final[f"{last}/{HOST}.rc"].strip() == "0"


def test_teardown(journey: Journey) -> None:
    """babysit.yml deleted the node: the status table lists none, the emulator stops."""
    run = ok(journey.run("teardown", timeout=600))
    assert "No TPU node and no worker in the inventory" in run.output, run.tail()
    assert not any(journey.leftovers().values()), journey.leftovers()
