"""The decisions of playbooks/babysit.yml (plugins/filter/babysit_*.py): its options, which run
it watches, what it does after each check, how long it backs off and whether it deletes the
run's nodes at its end (tpu_babysit_teardown, plugins/module_utils/tpu_babysit.py). The playbook
itself runs against a demo pod with two preemptions in tests/journey/test_journey_babysit.py."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_backoff import babysit_backoff
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_decide import babysit_decide
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_options import (
    MAX_RECOVERIES,
    babysit_options,
)
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_pick import babysit_pick
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_teardown import babysit_teardown
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_babysit import (
    TEARDOWN,
    teardown_now,
    teardown_problem,
)

OLD = "20261123T150000Z-aaaa"
NEW = "20261123T160000Z-bbbb"
ATTACHED = "20261123T170000Z-cccc"


def record(run_id: str, host: str, detached: bool = True, cmd: str = "python train.py") -> str:
    return json.dumps(
        {
            "run_id": run_id,
            "host": host,
            "cmd": cmd,
            "detached": detached,
            "pid": 42,
            "started": 1,
            "workdir": "/home/tpu/myproject",
        }
    )


def test_options_defaults():
    got = babysit_options({})
    assert got["ok"], got
    assert (got["max_recoveries"], got["interval"], got["backoff_max"]) == (3, 30, 600)
    assert got["timeout"] == 7 * 86400 and got["run"] == ""
    assert got["teardown"] == "never"
    assert got["log_dir"] == os.path.abspath(".cache/babysit")


def test_options_from_strings():
    got = babysit_options(
        {"max_recoveries": "2", "interval": "5", "timeout": "600", "run": NEW, "detach": "yes"}
    )
    assert got["ok"], got
    assert (got["max_recoveries"], got["interval"], got["timeout"], got["run"]) == (2, 5, 600, NEW)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            {"max_recoveries": str(MAX_RECOVERIES + 1)},
            ["tpu_babysit_max_recoveries", str(MAX_RECOVERIES + 1), "0 to 1000"],
        ),
        ({"max_recoveries": "many"}, ["tpu_babysit_max_recoveries", '"many"']),
        ({"interval": "0"}, ["tpu_babysit_interval", '"0"']),
        ({"timeout": True}, ["tpu_babysit_timeout", "true: not a whole number"]),
        ({"run": "latest"}, ["tpu_babysit_run", '"latest"', "20261123T143000Z-ab12"]),
        ({"cmd": "python x.py"}, ["takes no cmd"]),
        ({"detach": "false"}, ["tpu_run_detach", "always detached"]),
        ({"detach": "maybe"}, ["tpu_run_detach", "'maybe'"]),
        (
            {"teardown": "sometimes"},
            ["tpu_babysit_teardown", '"sometimes"', "allowed: never, on_success, always"],
        ),
        ({"teardown": "On_Success"}, ["tpu_babysit_teardown", '"On_Success"', "on_success"]),
        ({"teardown": "always\n"}, ["tpu_babysit_teardown", '"always\\n"']),
        ({"teardown": True}, ["tpu_babysit_teardown", "true", "allowed: never"]),
        ({"teardown": ["always"]}, ["tpu_babysit_teardown", '["always"]']),
    ],
)
def test_options_refused(raw, words):
    got = babysit_options(raw)
    assert not got["ok"]
    for word in words:
        assert word in got["message"], got["message"]


def test_options_every_problem_at_once():
    got = babysit_options({"interval": "-1", "run": "x"})
    assert len(got["errors"]) == 2, got


def test_pick_newest_detached_run():
    found = {
        "w0": [record(OLD, "w0"), record(NEW, "w0"), record(ATTACHED, "w0", detached=False)],
        "w1": "\n".join([record(OLD, "w1"), record(NEW, "w1"), "not json", "{}"]),
    }
    got = babysit_pick(found)
    assert got["ok"], got
    assert got["run_id"] == NEW and got["hosts"] == ["w0", "w1"]
    assert (got["cmd"], got["workdir"], got["script"]) == (
        "python train.py",
        "/home/tpu/myproject",
        "",
    )


def test_pick_requested_run_and_script():
    found = {"w0": [record(OLD, "w0", cmd="script: train.sh"), record(NEW, "w0")]}
    got = babysit_pick(found, OLD)
    assert got["ok"] and got["run_id"] == OLD and got["script"] == "train.sh", got


@pytest.mark.parametrize(
    ("found", "requested", "words"),
    [
        ({"w0": []}, "", ["no detached run", "tpu_run_detach=true"]),
        ({"w0": [record(ATTACHED, "w0", detached=False)]}, "", ["no detached run"]),
        ({"w0": [record(ATTACHED, "w0", detached=False)]}, ATTACHED, ["not detached"]),
        ({"w0": [record(NEW, "w0")]}, OLD, [OLD, "not recorded", NEW]),
    ],
)
def test_pick_refused(found, requested, words):
    got = babysit_pick(found, requested)
    assert not got["ok"]
    for word in words:
        assert word in got["message"], got["message"]


def facts(**change):
    base = {
        "nodes": [{"name": "pod", "state": "READY", "health": "HEALTHY"}],
        "node_names": ["pod"],
        "workers": {"w0": "", "w1": ""},
        "recoveries": 0,
        "max_recoveries": 3,
        "now": 100,
        "deadline": 1000,
    }
    base.update(change)
    return base


def test_decide_done():
    got = babysit_decide(facts(workers={"w0": "0\n", "w1": "0"}))
    assert got["action"] == "done", got
    assert "w0 rc 0, w1 rc 0" in got["message"]


def test_decide_failed_run_reports_exit_codes():
    got = babysit_decide(facts(workers={"w0": "0", "w1": "7"}))
    assert got["action"] == "failed" and "w1 rc 7" in got["message"], got


def test_decide_waits_while_a_worker_has_no_exit_code():
    got = babysit_decide(facts(workers={"w0": "0", "w1": ""}))
    assert got["action"] == "wait" and "w1" in got["message"], got


@pytest.mark.parametrize(
    ("state", "health"),
    [("PREEMPTED", None), ("TERMINATED", None), ("READY", "UNHEALTHY_TENSORFLOW")],
)
def test_decide_recovers_a_lost_node_even_after_exit_codes(state, health):
    # a preempted VM's processes get SIGTERM: the run may have written an exit code first
    lost = {"name": "pod", "state": state, "health": health}
    got = babysit_decide(facts(nodes=[lost], workers={"w0": "143", "w1": ""}, recoveries=2))
    assert got["action"] == "recover" and got["nodes"] == ["pod"], got
    assert "recovery 3" in got["message"]


def test_decide_gives_up_after_the_last_recovery():
    lost = {"name": "pod", "state": "PREEMPTED"}
    got = babysit_decide(facts(nodes=[lost], recoveries=3))
    assert got["action"] == "give_up" and "3 of 3" in got["message"], got


def test_decide_gives_up_on_a_node_the_api_no_longer_has():
    got = babysit_decide(facts(nodes=[]))
    assert got["action"] == "give_up" and "gone from the API" in got["message"], got


def test_decide_follows_recover_states_and_health():
    maintenance = {"name": "pod", "state": "READY", "health": "UNHEALTHY_MAINTENANCE"}
    assert babysit_decide(facts(nodes=[maintenance]))["action"] == "wait"
    got = babysit_decide(facts(nodes=[maintenance]), None, "UNHEALTHY_MAINTENANCE,TIMEOUT")
    assert got["action"] == "recover", got
    stopped = {"name": "pod", "state": "STOPPED"}
    assert babysit_decide(facts(nodes=[stopped]), ["STOPPED"])["action"] == "recover"


def test_decide_times_out():
    got = babysit_decide(facts(now=1000, deadline=1000))
    assert got["action"] == "timeout", got
    # an end seen at the deadline still counts
    assert babysit_decide(facts(now=2000, workers={"w0": "0", "w1": "0"}))["action"] == "done"


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(0, 0), (1, 0), (2, 30), (3, 60), (4, 120), (10, 600), ("3", 60)],
)
def test_backoff(attempt, expected):
    assert babysit_backoff(attempt, 30, 600) == expected


def watched(state, rc=None):
    """What the status probe's --watch prints for one worker."""
    return json.dumps({"run_id": NEW, "state": state, "rc": rc})


def test_decide_reads_the_probes_answers():
    workers = {"w0": watched("exited", 0), "w1": watched("exited", 0)}
    assert babysit_decide(facts(workers=workers))["action"] == "done"
    workers = {"w0": watched("exited", 0), "w1": watched("running")}
    assert babysit_decide(facts(workers=workers))["action"] == "wait"
    workers = {"w0": watched("exited", 0), "w1": "not json"}
    assert babysit_decide(facts(workers=workers))["action"] == "wait"


@pytest.mark.parametrize("state", ["gone", "missing"])
def test_decide_restarts_a_run_whose_process_is_gone(state):
    # A maintenance event rebooted the worker: the node is READY again, the run's process died
    # with the reboot and wrote no exit code. Waiting for one would wait until the timeout.
    workers = {"w0": watched(state), "w1": watched("running")}
    got = babysit_decide(facts(workers=workers, recoveries=1))
    assert got["action"] == "restart", got
    assert "gone on w0" in got["message"] and "restart 2" in got["message"], got
    assert got["nodes"] == [], got


def test_decide_gives_up_restarting_after_the_last_recovery():
    got = babysit_decide(facts(workers={"w0": watched("gone"), "w1": ""}, recoveries=3))
    assert got["action"] == "give_up" and "3 of 3" in got["message"], got


def test_decide_recovers_a_lost_node_before_restarting_a_gone_run():
    lost = {"name": "pod", "state": "PREEMPTED", "health": "HEALTH_UNSPECIFIED"}
    got = babysit_decide(facts(nodes=[lost], workers={"w0": watched("gone"), "w1": ""}))
    assert got["action"] == "recover" and got["nodes"] == ["pod"], got


def test_decide_waits_while_a_node_is_under_maintenance_and_the_run_still_goes():
    maintenance = {"name": "pod", "state": "READY", "health": "UNHEALTHY_MAINTENANCE"}
    workers = {"w0": watched("running"), "w1": watched("running")}
    assert babysit_decide(facts(nodes=[maintenance], workers=workers))["action"] == "wait"


@pytest.mark.parametrize("value", [*TEARDOWN, None, ""])
def test_options_teardown_accepted(value):
    got = babysit_options({"teardown": value})
    assert got["ok"], got
    assert got["teardown"] == (value or "never")
    assert teardown_problem(value) == ""


# How a babysit run can end: its last decision (babysit_decide's action) and whether it ended
# the watch. "rounds used" is a run restarted (or still running) when the last round was used.
ENDINGS = {
    "success": ("done", True),
    "failed run": ("failed", True),
    "gave up": ("give_up", True),
    "timed out": ("timeout", True),
    "rounds used, restarted": ("restart", False),
    "rounds used, recovered": ("recover", False),
    "rounds used, running": ("wait", False),
}
DELETES = {
    "never": set(),
    "on_success": {"success"},
    "always": {"success", "failed run", "gave up", "timed out"},
}


@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("policy", TEARDOWN)
def test_teardown_decision(policy, ending):
    action, over = ENDINGS[ending]
    expected = ending in DELETES[policy]
    assert teardown_now(policy, action, over) is expected
    babysit = {
        "action": action,
        "over": over,
        "nodes": {"pod-b": "us-west4-a", "pod-a": "us-central2-b"},
        "project": "my-project",
    }
    plan = babysit_teardown(babysit, policy)
    assert plan["delete"] is expected and plan["project"] == "my-project", plan
    if expected:
        assert plan["nodes"] == {"pod-a": "us-central2-b", "pod-b": "us-west4-a"}, plan
        listed = "pod-a (us-central2-b), pod-b (us-west4-a)"
        assert plan["note"] == f"deleted node {listed} (tpu_babysit_teardown={policy})", plan
    else:
        assert plan["nodes"] == {}, plan
        assert "deleted" not in plan["note"], plan
        assert (plan["note"] == "") is (policy == "never"), plan
        if policy != "never":
            assert "kept" in plan["note"] and f"tpu_babysit_teardown={policy}" in plan["note"]


def test_teardown_reads_over_as_text_and_needs_nodes():
    nodes = {"pod": "us-central2-b"}
    assert babysit_teardown({"action": "done", "over": "True", "nodes": nodes}, "always")["delete"]
    assert not babysit_teardown({"action": "done", "over": "False", "nodes": nodes}, "always")[
        "delete"
    ]
    assert not babysit_teardown({"action": "done", "over": True, "nodes": {}}, "always")["delete"]
    assert not babysit_teardown({"action": "done", "over": True}, "on_success")["delete"]


def test_teardown_refuses_an_unchecked_policy():
    with pytest.raises(ValueError, match="tpu_babysit_teardown"):
        teardown_now("sometimes", "done", True)
