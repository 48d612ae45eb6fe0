"""cloudtpu.pod.tpu_pull_wait: the pull results the workers publish as guest attributes
(module_utils/tpu_pull.py), the module's one look through the TPU API against the in-process
emulator, and the action's wait, which shows the workers done out of all at every poll."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from tests.module_harness import PROJECT, ZONE, run_module, serve, state
from tools.tpu_emulator.metadata import WorkerRef
from tools.tpu_emulator.testing import node

pull = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull")
action = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.action.tpu_pull_wait")


def result(state: str, rc: int | None = None, boot: int = 1700000000, seconds: int = 9) -> str:
    value: dict[str, Any] = {"state": state, "boot": boot}
    if state == "done":
        value.update(rc=rc, seconds=seconds)
    return json.dumps(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {"state": "pending", "rc": None, "boot": None, "seconds": None}),
        ("", {"state": "pending", "rc": None, "boot": None, "seconds": None}),
        (result("running"), {"state": "running", "rc": None, "boot": 1700000000, "seconds": None}),
        (result("done", 0), {"state": "done", "rc": 0, "boot": 1700000000, "seconds": 9}),
        (result("done", 2), {"state": "done", "rc": 2, "boot": 1700000000, "seconds": 9}),
        # not a result: a value cut short, or a done without an exit code, is still running
        ('{"state": "do', {"state": "running", "rc": None, "boot": None, "seconds": None}),
        ('{"state": "done"}', {"state": "running", "rc": None, "boot": None, "seconds": None}),
        (
            '{"state": "done", "rc": true}',
            {"state": "running", "rc": None, "boot": None, "seconds": None},
        ),
        ("[1]", {"state": "running", "rc": None, "boot": None, "seconds": None}),
    ],
)
def test_a_published_result_is_read(value: str | None, expected: dict[str, Any]) -> None:
    assert pull.parse_result(value) == expected


def test_the_progress_line_says_the_workers_done_out_of_all() -> None:
    counts = {"total": 8, "done": 3, "failed_workers": 1, "running": 4, "pending": 1}
    assert pull.progress_text(counts, 95.4) == (
        "pull bootstrap: 3 of 8 workers done, 1 failed, 4 running, 1 not started (95 s)"
    )
    assert (
        pull.progress_text({"total": 1, "done": 1}, 2)
        == "pull bootstrap: 1 of 1 workers done (2 s)"
    )


# -- the module: one look through the API ------------------------------------------------------


def publish(api: Any, node_id: str, worker: int, key: str, value: str) -> None:
    """What a worker's PUT to its metadata server stores."""
    ref = WorkerRef(PROJECT, ZONE, node_id, worker)
    assert api.emulator.set_guest_attribute(ref, pull.NAMESPACE, key, value)


def test_the_module_reads_every_workers_result_through_get_guest_attributes() -> None:
    with serve(state((ZONE, [node("pod-a", "v4-32"), node("pod-b", "v4-8")]))) as api:
        publish(api, "pod-a", 0, pull.RESULT_KEY, result("done", 0))
        publish(api, "pod-a", 1, pull.RESULT_KEY, result("done", 3))
        publish(api, "pod-a", 1, pull.LOG_KEY, "TASK [python]\nfatal: no python3.10\n")
        publish(api, "pod-a", 2, pull.RESULT_KEY, result("running"))
        publish(api, "pod-a", 3, "other-key", "x")  # not the pull's: worker 3 has not started
        api.reset_calls()
        outcome = run_module("tpu_pull_wait", api.auth(zone=ZONE, nodes=["pod-a", "pod-b"]))
        assert not outcome.failed, outcome.msg
        assert api.calls() == {"GET nodes.get": 2, "POST nodes.getGuestAttributes": 2}
    states = [(w["node"], w["worker_id"], w["state"], w["rc"]) for w in outcome["workers"]]
    assert states == [
        ("pod-a", 0, "done", 0),
        ("pod-a", 1, "done", 3),
        ("pod-a", 2, "running", None),
        ("pod-a", 3, "pending", None),
        ("pod-b", 0, "pending", None),
    ]
    assert outcome["workers"][1]["log"] == "TASK [python]\nfatal: no python3.10\n"
    assert outcome["workers"][0]["log"] == ""  # a log is read only for a failed pull
    assert (outcome["total"], outcome["done"], outcome["failed_workers"]) == (5, 2, 1)
    assert (outcome["running"], outcome["pending"], outcome["problems"]) == (1, 2, [])


def test_a_lost_or_missing_node_is_a_problem() -> None:
    nodes = [node("gone", "v4-8", state="PREEMPTED")]
    with serve(state((ZONE, nodes))) as api:
        outcome = run_module("tpu_pull_wait", api.auth(zone=ZONE, nodes=["gone", "never"]))
    assert not outcome.failed
    assert outcome["problems"] == [
        "TPU node gone is PREEMPTED: its workers cannot bootstrap; recreate it with "
        "playbooks/recover.yml.",
        "TPU node never does not exist (any more).",
    ]


# -- the action: the wait and its lines ----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def worker(node_id: str, index: int, state: str, rc: int | None = None, log: str = "") -> dict:
    return {"node": node_id, "worker_id": index, "state": state, "rc": rc, "boot": 1,
            "seconds": 30 if state == "done" else None, "log": log}  # fmt: skip


def looks(*rounds: list[dict[str, Any]], problems: list[str] | None = None) -> Any:
    answers = iter(rounds)
    return lambda: {"workers": next(answers), "problems": problems or []}


def test_the_wait_shows_a_line_per_poll_and_one_per_finished_worker() -> None:
    clock, shown = Clock(), []
    rounds = [
        [worker("pod-a", 0, "pending"), worker("pod-a", 1, "running")],
        [worker("pod-a", 0, "running"), worker("pod-a", 1, "done", 0)],
        [worker("pod-a", 0, "done", 0), worker("pod-a", 1, "done", 0)],
    ]
    got = action.wait_pull(looks(*rounds), shown.append, 600, 10, clock, clock.sleep)
    assert shown == [
        "pull bootstrap: 0 of 2 workers done, 1 running, 1 not started (0 s)",
        "pod-a worker 1: bootstrapped itself, ansible-pull exit code 0 after 30 s",
        "pull bootstrap: 1 of 2 workers done, 1 running (10 s)",
        "pod-a worker 0: bootstrapped itself, ansible-pull exit code 0 after 30 s",
        "pull bootstrap: 2 of 2 workers done (20 s)",
    ]
    assert not got["failed"] and (got["done"], got["total"]) == (2, 2)
    assert got["msg"] == "All 2 workers bootstrapped themselves (ansible-pull exit code 0)."


def test_a_failed_pull_fails_the_wait_with_the_end_of_its_log() -> None:
    clock, shown = Clock(), []
    rounds = [[worker("pod-a", 0, "done", 0), worker("pod-a", 1, "done", 2, "one\n\nfatal: two\n")]]
    got = action.wait_pull(looks(*rounds), shown.append, 600, 10, clock, clock.sleep)
    assert got["failed"] is True and (got["done"], got["failed_workers"]) == (2, 1)
    assert got["msg"] == (
        "pod-a worker 1: the pull bootstrap ended with exit code 2 after 30 s; the end of "
        "/var/log/cloudtpu-pull.log: one | fatal: two"
    )


def test_the_wait_ends_when_the_time_is_up_naming_the_late_workers() -> None:
    clock, shown = Clock(), []
    rounds = [[worker("pod-a", 0, "running")]] * 4
    got = action.wait_pull(looks(*rounds), shown.append, 25, 10, clock, clock.sleep)
    assert got["failed"] and clock.now == 25
    assert got["msg"].startswith(
        "The pull bootstrap has not finished after 25 s on pod-a worker 0 (running)."
    )
    assert len([line for line in shown if line.startswith("pull bootstrap:")]) == 4


def test_a_lost_node_ends_the_wait_at_once() -> None:
    clock, shown = Clock(), []
    lost = ["TPU node pod-a is PREEMPTED: its workers cannot bootstrap; recreate it."]
    got = action.wait_pull(looks([], problems=lost), shown.append, 600, 10, clock, clock.sleep)
    assert got["failed"] and got["msg"] == lost[0] and clock.now == 0


def test_a_failed_look_is_the_tasks_result() -> None:
    failure = {"failed": True, "msg": "Permission 'tpu.nodes.get' denied", "reason": "DENIED"}
    got = action.wait_pull(lambda: failure, print, 600, 10)
    assert got == failure
