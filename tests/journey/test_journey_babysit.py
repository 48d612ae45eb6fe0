"""The README's "Babysitting a long run" journey, run as a user runs it: one worker (v4-8) from
the emulator, bootstrapped with ``site.yml --tags python,libtpu,storage`` (the venv and the TPU
lock helper: all a run needs, see test_journey_multislice.py; and the bucket sit-checkpoints,
made in the demo's bucket service by ``tools/emulator.sh bucket``, mounted at /mnt/checkpoints
with rclone), a detached 60-step training script that checkpoints its step in the bucket and
resumes from it, then ``babysit.yml`` with the same tags and bucket, during which the node is
preempted twice and then goes through a maintenance event, and given
``tpu_babysit_teardown=on_success`` deletes the node once the run has completed; then the status
table shows no node and the emulator and its bucket service stop.

The checkpoint is kept by the user's commands alone: each recreated node mounts the bucket
again with the storage role, the rebooted worker from its fstab entry; the test carries no file.
What comes from outside the user's commands, as on Google Cloud, is the preemptions and the
maintenance event: this test asks the emulator's admin API to preempt the node (the workers'
containers are killed at once) when the bucket holds a new step, then to simulate a maintenance
event (the containers restart, their disks stay: the run's process is ended by the shutdown and
the node comes back READY), from a thread, while the babysit step runs. It reads the bucket from
this machine through the bucket service's JSON API, as gcloud would read a real one.

For observation only, the test copies each killed run's log out of its container (a preemption
takes the log with the disk; logs that outlive the node are another matter), and the last two
runs' folders, on the node babysit.yml deletes at its end, as soon as the last run wrote its exit
code (the babysitter takes a few seconds more to see it and delete the node).

Checked: the bucket is mounted after the up step; the babysit step succeeds; its log on this
machine records two recoveries, the run found gone after the maintenance event, and three
restarts, each with its time; every step is printed exactly once across the original run and its
three continuations, and each continuation resumed after the last step its predecessor printed
(for a preempted run, the step the bucket held once the node was killed); each continuation's
record names the run it continues; the babysitter logged and reported the node's deletion, the
emulator has no node left and no worker container or network; the bucket holds the checkpoint of
step 60; before the deletion babysit.yml brought every attempt's log to this machine
(./.cache/runs/<run id>/, logs.yml with the copies in the bucket). Then the status table lists no
node, and the bucket service no longer answers.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
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
BUCKET = "sit-checkpoints"  # as the README's commands name it, mounted at MOUNT
MOUNT = "/mnt/checkpoints"
CKPT = "train-step.txt"  # the object train.py's CKPT is, in the bucket
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
    mounted = journey.exec(0, f"findmnt -n -o SOURCE,FSTYPE {MOUNT}", check=False).split()
    assert len(mounted) == 2 and mounted[0].endswith(f":{BUCKET}"), mounted  # :gcs{...}:BUCKET
    assert mounted[1] == "fuse.rclone", mounted


def test_train(journey: Journey) -> None:
    run = ok(journey.run("train", timeout=300))
    journey.facts["first_run"] = run_id(run)


def _wait(what: str, check, timeout: float = 600, pause: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except AssertionError:
            value = None
        if value:
            return value
        time.sleep(pause)
    raise AssertionError(f"timed out waiting for {what}")


def _object(journey: Journey, name: str) -> str | None:
    """An object of the bucket, read on this machine through the bucket service's JSON API
    (None when the bucket has no such object)."""
    service = (journey.demo_dir / "storage-url").read_text(encoding="utf-8").strip()
    url = f"{service}/storage/v1/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise AssertionError(f"the bucket service answered {error.code} for {name}") from error
    except OSError as error:
        raise AssertionError(f"the bucket service did not answer: {error}") from error


def _step(journey: Journey) -> int:
    """The step of the checkpoint in the bucket (0 before the first)."""
    text = (_object(journey, CKPT) or "0").strip()
    return int(text) if text.isdigit() else 0


def _newest_run(journey: Journey) -> str:
    """The newest run folder on worker 0 (run ids sort by their start time); '' when none can
    be listed (the container restarting for the maintenance event answers nothing)."""
    listed = journey.exec(0, f"ls -1 {RUNS_DIR} 2>/dev/null || true", check=False).split()
    runs = sorted(name for name in listed if re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{4}", name))
    return runs[-1] if runs else ""


def _runs_tar(container: str) -> bytes:
    """The runs folder of a container, as the tar stream docker cp writes ('' when it fails)."""
    return subprocess.run(
        ["docker", "cp", f"{container}:{RUNS_DIR}", "-"], capture_output=True, check=False
    ).stdout


def _preempter(journey: Journey, first: str, notes: dict, errors: list) -> None:
    """Preempt the node twice while the babysitter watches and the run makes progress, each time
    as soon as the bucket holds the step waited for (the script prints the step, then works a
    second on the next one); note the bucket's step once the node is killed and keep the killed
    run's log. After the maintenance event, copy the runs folder out as soon as the last run has
    its exit code: babysit.yml deletes the node (and its disk) once it sees that code."""
    log = REPO / ".cache" / "babysit" / f"{first}.log"
    try:
        _wait("the babysitter's log", log.is_file, timeout=600)
        for number in range(PREEMPTIONS):
            old = journey.worker(0)
            floor = _step(journey) + 3 + 5 * number  # a few steps into each run
            _wait(f"step {floor}", lambda f=floor: _step(journey) >= f, timeout=900, pause=0.1)
            seen = time.monotonic()
            journey.admin(
                "POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:preempt", body={}
            )
            killed_after = round(time.monotonic() - seen, 2)
            step = _step(journey)  # nothing writes the bucket until the run is restarted
            logs = _runs_tar(old["name"])
            notes.setdefault("killed", []).append(
                {"step": step, "runs_tar": logs, "killed_after": killed_after}
            )

            def fresh(old_id: str = old["id"]) -> bool:
                new = journey.worker(0)
                return new["id"] != old_id and new["state"] == "running"

            _wait("the recreated worker", fresh, timeout=900)
        # A maintenance event once the second continuation makes progress: the worker restarts
        # with its disk and its fstab entry, the run's process is gone, no exit code.
        floor = _step(journey) + 8
        _wait(f"step {floor}", lambda: _step(journey) >= floor, timeout=900, pause=0.1)
        ended = _newest_run(journey)  # the run the maintenance event ends
        assert ended, "no run folder on the worker before the maintenance event"
        journey.admin(
            "POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:maintenance", body={}
        )
        notes["maintenance"] = True

        def last_done() -> bool:
            newest = _newest_run(journey)
            return newest not in ("", ended) and journey.exists(0, f"{RUNS_DIR}/{newest}/{HOST}.rc")

        _wait("the last run's exit code", last_done, timeout=900)
        notes["final_runs_tar"] = _runs_tar(journey.worker(0)["name"])
    except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in the thread
        errors.append(exc)


def _steps_in(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^step (\d+)$", text, flags=re.MULTILINE)]


def _resumed_after(text: str) -> int:
    found = re.findall(r"^resuming after step (\d+)$", text, flags=re.MULTILINE)
    assert len(found) == 1, text
    return int(found[0])


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
    # each continuation resumed, from the bucket, after the last step its predecessor printed;
    # for a preempted run that is the step the bucket held once the node was killed
    assert _resumed_after(logs[first]) == 0, logs[first]
    for new, old in restarts:
        assert _resumed_after(logs[new]) == _steps_in(logs[old])[-1], (old, logs[old], logs[new])
    # (the kill lands in the second the script works after a checkpoint: killed_after, the
    # seconds from seeing the step in the bucket to the node's kill, is well under one)
    killed = [(k["step"], k["killed_after"]) for k in notes["killed"]]
    print(f"preempted at (bucket step, seconds from seeing it to the kill): {killed}")
    reached = [_steps_in(logs[old])[-1] for _, old in restarts[:2]]
    assert [step for step, _ in killed] == reached, (killed, reached)
    # the checkpoint outlived both preempted nodes and the deleted one: step 60, in the bucket
    assert _object(journey, CKPT) == str(STEP_COUNT)
    # the run the maintenance event ended: signalled by the shutdown (its wrapper wrote 143 as
    # it went down, or nothing), taken as gone, not as failed; its continuation ended with 0
    gone = restarts[1][0]
    rc = final.get(f"{gone}/{HOST}.rc", "none").strip()
    assert rc in ("143", "137", "none"), rc
    last = restarts[2][0]
    record = final[f"{last}/{HOST}.json"]
    assert f'"continues": "{gone}"' in record, record
    assert final[f"{last}/{HOST}.rc"].strip() == "0"
    # tpu_run_log_copy: every attempt kept its log and record in the bucket as it ran, read back
    # here from the bucket service (the copy may trail a killed run by up to a second: its
    # first line and its record are what is checked, not its last steps)
    for new, old in [(first, ""), *restarts]:
        copied = _object(journey, f"runs/{new}/{HOST}.log")
        assert copied and f"resuming after step {_resumed_after(logs[new])}" in copied, (
            new,
            copied,
        )
        kept = _object(journey, f"runs/{new}/{HOST}.json") or ""
        assert f'"continues": "{old}"' in kept, (new, kept)
    assert (_object(journey, f"runs/{last}/{HOST}.rc") or "").strip() == "0"
    # and babysit.yml brought every attempt's log home before it deleted the node (logs.yml
    # with the copies): the last attempt's whole, the killed ones' from their copies
    home = REPO / ".cache" / "runs"
    for new, _ in [(first, ""), *restarts]:
        fetched = (home / new / f"{HOST}.log").read_text(encoding="utf-8")
        assert _resumed_after(fetched) == _resumed_after(logs[new]), (new, fetched)
    assert (home / last / f"{HOST}.log").read_text(encoding="utf-8") == logs[last]
    assert f"It continues {first}, {restarts[0][0]}, {gone}" in run.output, run.tail()


def test_teardown(journey: Journey) -> None:
    """babysit.yml deleted the node: the status table lists none, the emulator and its bucket
    service stop; the bucket's objects stay in the demo's folder."""
    service = (journey.demo_dir / "storage-url").read_text(encoding="utf-8").strip()
    run = ok(journey.run("teardown", timeout=600))
    assert "No TPU node and no worker in the inventory" in run.output, run.tail()
    assert not any(journey.leftovers().values()), journey.leftovers()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{service}/storage/v1/b", timeout=5)
    assert (journey.demo_dir / "buckets" / BUCKET / CKPT).read_text() == str(STEP_COUNT)
