"""provision_plan (queued resource or plain nodes) and recover_plan (what recover.yml does with
each node), the Python behind the filters of the same names; and what tpu_queued.py reads of a
queued resource request (the node ids it names, its state)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

queued = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued")
recover = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_recover"
)

STATES = ["PREEMPTED", "TERMINATED"]
HEALTH = ["UNHEALTHY_TENSORFLOW", "TIMEOUT"]


@pytest.mark.parametrize(
    ("method", "tier", "reservation", "expected"),
    [
        ("auto", "on_demand", "", "node"),
        ("auto", "spot", "", "queued_resource"),
        ("auto", "guaranteed", "", "queued_resource"),
        ("auto", "flex_start", "", "queued_resource"),
        ("auto", "on_demand", "projects/p/locations/z/reservations/r", "queued_resource"),
        ("node", "spot", "", "node"),
        ("queued_resource", "on_demand", "", "queued_resource"),
        (None, None, None, "node"),
    ],
)
def test_provision_plan_picks_queued_resources_where_capacity_calls_for_them(
    method: Any, tier: Any, reservation: Any, expected: str
) -> None:
    plan = queued.provision_plan(method, tier, reservation)
    assert plan["problem"] == "" and plan["method"] == expected, plan
    how = "a queued resource" if expected == "queued_resource" else "plain nodes"
    assert how in plan["why"], plan


@pytest.mark.parametrize(
    ("method", "tier", "reservation", "said"),
    [
        ("magic", "spot", "", "tpu_provision_method is 'magic'"),
        ("auto", "cheap", "", "tpu_provision_tier is 'cheap'"),
        ("node", "guaranteed", "", "needs a queued resource"),
        ("node", "flex_start", "", "needs a queued resource"),
        ("node", "on_demand", "projects/p/locations/z/reservations/r", "with a reservation"),
    ],
)
def test_provision_plan_refuses_what_cannot_work(
    method: str, tier: str, reservation: str, said: str
) -> None:
    assert said in queued.provision_plan(method, tier, reservation)["problem"]


def node(name: str, state: str = "READY", health: str = "HEALTHY", qr: str | None = None) -> dict:
    return {"name": name, "state": state, "health": health, "queued_resource": qr}


def test_recover_plan_per_node() -> None:
    nodes = [
        node("lost", "PREEMPTED"),
        node("slice-0", "PREEMPTED", "", "slices"),
        node("sick", health="TIMEOUT"),
        node("maint", health="UNHEALTHY_MAINTENANCE"),
        node("fine"),
    ]
    plan = recover.recover_plan(nodes, STATES, HEALTH)
    assert [(p["name"], p["action"]) for p in plan] == [
        ("lost", "recreate"),
        ("slice-0", "requeue"),
        ("sick", "recreate"),
        ("maint", "maintenance"),
        ("fine", ""),
    ]
    assert plan[1]["queued_resource"] == "slices"
    refusal = plan[4]["problem"]
    assert "is READY (health HEALTHY)" in refusal and "tpu_recover_force=true" in refusal
    assert all(p["problem"] == "" for p in plan[:4])


def test_recover_plan_rebooted_force_and_maintenance_named_as_lost() -> None:
    rebooted = recover.recover_plan([node("fine")], STATES, HEALTH, rebooted=True)
    assert rebooted[0]["action"] == "rebootstrap"
    forced = recover.recover_plan([node("fine"), node("q", qr="q")], STATES, HEALTH, force=True)
    assert [p["action"] for p in forced] == ["recreate", "requeue"]
    named = recover.recover_plan(
        [node("maint", health="UNHEALTHY_MAINTENANCE")], STATES, [*HEALTH, "UNHEALTHY_MAINTENANCE"]
    )
    assert named[0]["action"] == "recreate"
    stopped = recover.recover_plan([node("s", "STOPPED")], STATES, HEALTH, rebooted=True)
    assert "state=started" in stopped[0]["problem"]


def test_recreate_body_keeps_the_request_and_drops_output_fields() -> None:
    qr = {
        "name": "projects/p/locations/z/queuedResources/q",
        "createTime": "2030-01-01T00:00:00Z",
        "state": {"state": "SUSPENDED"},
        "tpu": {"nodeSpec": [{"nodeId": "q"}]},
        "runDuration": {"maxRunDuration": "60s"},
        "queueingPolicy": {"validUntilDuration": "600s"},
    }
    assert queued.recreate_body(qr) == {
        "tpu": {"nodeSpec": [{"nodeId": "q"}]},
        "runDuration": {"maxRunDuration": "60s"},
        "queueingPolicy": {"validUntilDuration": "600s"},
    }
    assert queued.tier_of(qr) == "flex_start"


def test_progress_records_states_once_and_attempts_in_order() -> None:
    progress = queued.Progress()
    for word in ("CREATING", "CREATING", "FAILED"):
        progress.saw(word)
    progress.attempt("created")
    progress.ended("FAILED", "stockout")
    progress.attempt("requeued")
    progress.ended("ACTIVE")
    assert progress.states == ["CREATING", "FAILED"]
    assert [(a["attempt"], a["why"], a["state"]) for a in progress.attempts] == [
        (1, "created", "FAILED"),
        (2, "requeued", "ACTIVE"),
    ]


def test_recover_plan_knows_a_node_that_bootstraps_itself_from_provisions_own_template() -> None:
    from pathlib import Path

    template = Path(__file__).resolve().parents[3] / "playbooks/templates/pull_startup.sh.j2"
    script = template.read_text(encoding="utf-8")  # the Jinja is not rendered: only the head counts
    pulled = {**node("pulled", "PREEMPTED"), "spec": {"metadata": {"startup-script": script}}}
    other = {
        **node("own", "PREEMPTED"),
        "spec": {"metadata": {"startup-script": "#!/bin/bash\necho cloudtpu.pod pull bootstrap"}},
    }
    odd = {**node("odd", "PREEMPTED"), "spec": {"metadata": {"startup-script": ["x"]}}}
    plan = recover.recover_plan([pulled, other, odd, node("plain", "PREEMPTED")], STATES, HEALTH)
    assert [(p["name"], p["pull"]) for p in plan] == [
        ("pulled", True),
        ("own", False),  # a user's own startup-script that merely names the words
        ("odd", False),
        ("plain", False),
    ]


@pytest.mark.parametrize(
    ("qr_id", "node_id", "count", "prefix", "expected"),
    [
        ("qr", None, 1, None, ["qr"]),
        ("qr", "n", 1, "ignored", ["n"]),
        ("qr", None, 3, None, ["qr-0", "qr-1", "qr-2"]),
        ("qr", None, 2, "ms", ["ms-0", "ms-1"]),
    ],
)
def test_multislice_node_ids(
    qr_id: str, node_id: str | None, count: int, prefix: str | None, expected: list[str]
) -> None:
    assert queued.multislice_node_ids(qr_id, node_id, count, prefix) == expected


def test_queued_resource_state_explains_a_failure() -> None:
    qr = {"state": {"state": "FAILED", "failedData": {"error": {"message": "no quota"}}}}
    assert queued.queued_resource_state(qr) == ("FAILED", "no quota")
