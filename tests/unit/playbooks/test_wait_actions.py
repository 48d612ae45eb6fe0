"""The waits of the actions job_wait and ssh_wait: a line per poll while they wait, the
task's result when they end (plugins/action/job_wait.py, plugins/action/ssh_wait.py)."""

from __future__ import annotations

import importlib
from typing import Any

# -- cloudtpu.pod.job_wait -------------------------------------------------------------------

job_wait = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.action.job_wait")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def wait(statuses: list[dict[str, Any]], clock: Clock, **options: Any) -> tuple[dict, list[str]]:
    shown: list[str] = []
    reads = iter(statuses)
    settings = {"timeout": 60.0, "poll": 5.0}
    settings.update(options)
    result = job_wait.wait_job(
        lambda: next(reads),
        shown.append,
        "pod-a-w0",
        "framework check",
        settings["timeout"],
        settings["poll"],
        clock=clock,
        sleep=clock.sleep,
    )
    return result, shown


RUNNING = {"started": True, "finished": False}
FINISHED = {"started": True, "finished": True, "rc": 0}


def test_a_short_job_is_seen_done_within_a_second_and_prints_nothing() -> None:
    clock = Clock()
    result, shown = wait([RUNNING, FINISHED], clock)
    assert result == {"changed": False, "finished": True, "seconds": 1.0}
    assert shown == []


def test_a_long_job_prints_a_line_every_poll_and_reads_less_often_in_time() -> None:
    clock = Clock()
    result, shown = wait([RUNNING] * 30 + [FINISHED], clock, timeout=600.0)
    assert result["finished"] is True and not result.get("failed")
    assert shown[:3] == [
        "pod-a-w0: framework check running (5 s)",
        "pod-a-w0: framework check running (10 s)",
        "pod-a-w0: framework check running (15 s)",
    ]
    assert clock.sleeps[:2] == [1.0, 1.0] and max(clock.sleeps) == 5.0
    # a line at every poll mark while it ran; the read that finds it done prints none
    marks = range(5, int(clock.now), 5)
    assert shown == [f"pod-a-w0: framework check running ({m} s)" for m in marks]


def test_a_job_still_running_at_the_timeout_fails_the_task() -> None:
    clock = Clock()
    result, _ = wait([RUNNING] * 100, clock, timeout=12.0)
    assert result["failed"] is True and result["finished"] is False
    assert result["msg"] == "pod-a-w0: framework check still running after 12 s."
    assert clock.now == 12.0


def test_a_job_that_cannot_be_read_fails_with_async_status_s_words() -> None:
    clock = Clock()
    result, _ = wait([{"failed": True, "finished": False, "msg": "could not find job"}], clock)
    assert result["failed"] is True
    assert result["msg"] == "pod-a-w0: framework check cannot be read: could not find job"


def test_a_failed_job_is_finished_here_its_result_is_collected_afterwards() -> None:
    clock = Clock()
    result, _ = wait([{"finished": True, "failed": True, "rc": 1}], clock)
    assert result == {"changed": False, "finished": True, "seconds": 0.0}


# -- cloudtpu.pod.ssh_wait -------------------------------------------------------------------

ssh_wait = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.action.ssh_wait")


def wait_for_ssh(answers: list[bool], clock: Clock, timeout: float = 60.0, poll: float = 10.0):
    """ssh_wait over a host that answers (True) or not (False) in each slice; each slice lasts
    the time it is given. (result, lines shown, the slices' lengths)"""
    shown: list[str] = []
    slices: list[float] = []
    tries = iter(answers)

    def attempt(seconds: float) -> dict[str, Any]:
        slices.append(seconds)
        if next(tries):
            clock.now += 0.5
            return {"changed": False, "elapsed": 0}
        clock.now += seconds
        return {"failed": True, "msg": "timed out waiting for ping module test: refused"}

    result = ssh_wait.wait_ssh(attempt, shown.append, "pod-a-w0", timeout, poll, clock=clock)
    return result, shown, slices


def test_a_host_that_answers_at_once_prints_nothing() -> None:
    result, shown, slices = wait_for_ssh([True], Clock())
    assert result == {"changed": False, "elapsed": 0.5} and shown == [] and slices == [10.0]


def test_a_line_after_every_slice_without_an_answer() -> None:
    result, shown, _ = wait_for_ssh([False, False, True], Clock())
    assert not result.get("failed") and result["elapsed"] == 20.5
    assert shown == ["pod-a-w0: no SSH answer yet (10 s)", "pod-a-w0: no SSH answer yet (20 s)"]


def test_a_host_that_never_answers_fails_at_the_timeout_with_the_last_reason() -> None:
    result, shown, slices = wait_for_ssh([False] * 10, Clock(), timeout=25.0)
    assert result["failed"] and result["elapsed"] == 25.0
    assert "no answer over its connection after 25 s" in result["msg"]
    assert "refused" in result["msg"]
    # the last slice is cut to the time left; a line after each slice but the last
    assert slices == [10.0, 10.0, 5.0] and len(shown) == 2
