"""cloudtpu.pod.tpu_queued_resource against the in-memory emulator."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.module_harness import PROJECT, ZONE, Api, run_module, serve, state

REQUEST = {
    "name": "qr-a",
    "zone": ZONE,
    "tier": "spot",
    "accelerator_type": "v4-8",
    "runtime_version": "tpu-ubuntu2204-base",
    "labels": {"team": "vision"},
    "poll_interval": 0.05,
    "timeout": 30,
}


def qr_args(api: Api, **changes: Any) -> dict[str, Any]:
    return api.auth(**{**REQUEST, **changes})


def test_spot_request_becomes_active_with_its_node(api: Api) -> None:
    outcome = run_module("tpu_queued_resource", qr_args(api))
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is True and outcome["state"] == "ACTIVE"
    assert [n["name"] for n in outcome["nodes"]] == ["qr-a"]
    node = api.node("qr-a")
    assert node["state"] == "READY"
    assert node["schedulingConfig"]["spot"] is True
    assert node["labels"] == {"team": "vision"}
    assert "spot" in api.queued("qr-a")


@pytest.mark.parametrize(
    ("accelerator_type", "runtime"),
    [
        ("v5litepod-8", "v2-alpha-tpuv5-lite"),
        ("v5p-8", "v2-alpha-tpuv5"),
        ("v6e-4", "v2-alpha-tpuv6e"),
    ],
)
def test_request_without_runtime_version_boots_the_generations_image(
    api: Api, accelerator_type: str, runtime: str
) -> None:
    outcome = run_module(
        "tpu_queued_resource",
        qr_args(api, accelerator_type=accelerator_type, runtime_version=None),
    )
    assert not outcome.failed, outcome.msg
    assert api.node("qr-a")["runtimeVersion"] == runtime
    assert api.queued("qr-a")["tpu"]["nodeSpec"][0]["node"]["runtimeVersion"] == runtime


def test_multislice_request_creates_prefixed_nodes(api: Api) -> None:
    outcome = run_module(
        "tpu_queued_resource", qr_args(api, node_count=3, node_prefix="ms", tier="guaranteed")
    )
    assert not outcome.failed, outcome.msg
    names = [n["name"] for n in outcome["nodes"]]
    assert names == ["ms-0", "ms-1", "ms-2"]
    assert all(api.node(name)["state"] == "READY" for name in names)
    spec = api.queued("qr-a")["tpu"]["nodeSpec"][0]
    assert spec["multisliceParams"] == {"nodeCount": 3, "nodeIdPrefix": "ms"}
    assert "guaranteed" in api.queued("qr-a")


def test_second_run_changes_nothing(api: Api) -> None:
    run_module("tpu_queued_resource", qr_args(api))
    api.reset_calls()
    again = run_module("tpu_queued_resource", qr_args(api))
    assert not again.failed, again.msg
    assert again["changed"] is False and again["state"] == "ACTIVE"
    assert api.mutating_calls() == {}, api.calls()


def test_a_different_request_under_the_same_name_is_refused(api: Api) -> None:
    run_module("tpu_queued_resource", qr_args(api))
    outcome = run_module("tpu_queued_resource", qr_args(api, tier="guaranteed", node_count=2))
    assert outcome.failed
    assert "tier: 'spot' -> 'guaranteed'" in outcome.msg, outcome.msg
    assert "['qr-a'] -> ['qr-a-0', 'qr-a-1']" in outcome.msg, outcome.msg


def test_check_mode_makes_no_mutating_call(api: Api) -> None:
    outcome = run_module("tpu_queued_resource", qr_args(api), check=True)
    assert not outcome.failed and outcome["changed"] is True
    assert api.mutating_calls() == {}, api.calls()
    assert api.queued("qr-a") is None


def test_check_mode_on_an_active_multislice_request_lists_its_nodes(api: Api) -> None:
    args = qr_args(api, node_count=2, node_prefix="ms", tier="guaranteed")
    normal = run_module("tpu_queued_resource", args)
    assert not normal.failed, normal.msg
    api.reset_calls()
    checked = run_module("tpu_queued_resource", args, check=True)
    assert not checked.failed, checked.msg
    assert checked["changed"] is False and checked["state"] == "ACTIVE"
    assert [n["name"] for n in checked["nodes"]] == ["ms-0", "ms-1"]
    assert checked["nodes"] == normal["nodes"]
    assert api.mutating_calls() == {}, api.calls()


def test_failed_request_is_explained_with_the_api_reason() -> None:
    failed = {
        "queuedResourceId": "qr-a",
        "tpu": {
            "nodeSpec": [
                {
                    "parent": f"projects/{PROJECT}/locations/{ZONE}",
                    "nodeId": "qr-a",
                    "node": {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"},
                }
            ]
        },
        "spot": {},
        "state": {
            "state": "FAILED",
            "failedData": {"error": {"code": 8, "message": "Quota exceeded for TPUV4 cores"}},
        },
    }
    initial = state()
    initial["projects"][PROJECT]["zones"][ZONE] = {"queued_resources": [failed]}
    with serve(initial) as api:
        outcome = run_module("tpu_queued_resource", qr_args(api))
    assert outcome.failed
    assert outcome["state"] == "FAILED"
    assert "FAILED: Quota exceeded for TPUV4 cores" in outcome.msg, outcome.msg
    assert "state: absent" in outcome.msg


def test_waiting_for_capacity_past_the_timeout_fails_but_stays_queued() -> None:
    initial = state()
    initial["projects"][PROJECT]["zones"][ZONE] = {"capacity": False}
    with serve(initial) as api:
        started = time.monotonic()
        outcome = run_module("tpu_queued_resource", qr_args(api, timeout=1))
        elapsed = time.monotonic() - started
        assert outcome.failed
        assert "still WAITING_FOR_RESOURCES after 1 s" in outcome.msg, outcome.msg
        assert api.queued("qr-a")["state"]["state"] == "WAITING_FOR_RESOURCES"
    assert elapsed < 3, f"waited {elapsed:.1f} s for a 1 s timeout"


def test_delete_without_force_surfaces_the_api_refusal(api: Api) -> None:
    run_module("tpu_queued_resource", qr_args(api))
    outcome = run_module("tpu_queued_resource", qr_args(api, state="absent"))
    assert outcome.failed
    assert "force=true" in outcome.msg, outcome.msg
    assert api.queued("qr-a") is not None and api.node("qr-a") is not None


def test_delete_with_force_removes_the_request_and_its_nodes(api: Api) -> None:
    run_module("tpu_queued_resource", qr_args(api, node_count=2))
    outcome = run_module("tpu_queued_resource", qr_args(api, state="absent", force=True))
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is True and outcome["state"] == "ABSENT"
    assert api.queued("qr-a") is None
    assert api.node("qr-a-0") is None and api.node("qr-a-1") is None
    again = run_module("tpu_queued_resource", qr_args(api, state="absent", force=True))
    assert again["changed"] is False


FAIL_NEXT = f"projects/{PROJECT}/locations/{ZONE}/queuedResources:failNext"


def test_flex_start_asks_for_a_bounded_run_and_a_validity_window(api: Api) -> None:
    outcome = run_module(
        "tpu_queued_resource",
        qr_args(
            api,
            tier="flex_start",
            max_run_duration="14400s",
            valid_until_duration="86400s",
            valid_after_duration="0.2s",
        ),
    )
    assert not outcome.failed, outcome.msg
    qr = api.queued("qr-a")
    assert qr["runDuration"] == {"maxRunDuration": "14400s"}
    assert qr["queueingPolicy"] == {"validUntilDuration": "86400s", "validAfterDuration": "0.2s"}
    assert "spot" not in qr and "guaranteed" not in qr
    assert api.node("qr-a")["schedulingConfig"]["provisioningModel"] == "FLEX_START"
    seen = outcome["states_seen"]
    assert seen[0] == "WAITING_FOR_RESOURCES" and seen[-1] == "ACTIVE", seen
    again = run_module(
        "tpu_queued_resource", qr_args(api, tier="flex_start", max_run_duration="14400s")
    )
    assert not again.failed and again["changed"] is False, again.msg


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"tier": "flex_start"}, "needs max_run_duration"),
        ({"tier": "flex_start", "max_run_duration": "4h"}, "max_run_duration is '4h'"),
        ({"max_run_duration": "60s"}, "for tier flex_start only"),
        ({"valid_until_time": "tomorrow"}, "valid_until_time is 'tomorrow'"),
        (
            {"valid_after_duration": "60s", "valid_after_time": "2030-01-31T08:00:00Z"},
            "mutually exclusive",
        ),
        ({"requeue_tries": -1}, "requeue_tries"),
    ],
)
def test_schedule_options_are_checked_before_any_call(
    api: Api, changes: dict[str, Any], said: str
) -> None:
    outcome = run_module("tpu_queued_resource", qr_args(api, **changes))
    assert outcome.failed and said in outcome.msg, outcome.msg
    assert api.calls() == {}


def test_a_failed_request_is_requeued_with_the_same_spec(api: Api) -> None:
    api.admin("POST", FAIL_NEXT, {"message": "stockout"})
    outcome = run_module("tpu_queued_resource", qr_args(api, requeue_tries=2))
    assert not outcome.failed, outcome.msg
    assert outcome["state"] == "ACTIVE"
    attempts = [(a["why"], a["state"], a["reason"]) for a in outcome["attempts"]]
    assert attempts == [("created", "FAILED", "stockout"), ("requeued", "ACTIVE", "")]
    assert "FAILED" in outcome["states_seen"] and outcome["states_seen"][-1] == "ACTIVE"
    assert api.node("qr-a")["labels"] == {"team": "vision"}
    assert "spot" in api.queued("qr-a")
    assert api.calls()["DELETE queuedResources.delete"] == 1


def test_requeueing_stops_after_the_tries_given(api: Api) -> None:
    api.admin("POST", FAIL_NEXT, {"message": "stockout", "times": 3})
    outcome = run_module("tpu_queued_resource", qr_args(api, requeue_tries=1))
    assert outcome.failed
    assert "FAILED: stockout after 1 re-queue(s)" in outcome.msg, outcome.msg
    assert [a["state"] for a in outcome["attempts"]] == ["FAILED", "FAILED"]


def test_a_suspended_request_found_is_requeued(api: Api) -> None:
    run_module("tpu_queued_resource", qr_args(api))
    api.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/queuedResources/qr-a:suspend")
    deadline = time.monotonic() + 5
    while api.queued("qr-a")["state"]["state"] != "SUSPENDED" and time.monotonic() < deadline:
        time.sleep(0.02)
    refused = run_module("tpu_queued_resource", qr_args(api))
    assert refused.failed and "is SUSPENDED" in refused.msg, refused.msg
    check = run_module("tpu_queued_resource", qr_args(api, requeue_tries=1), check=True)
    assert not check.failed and check["changed"] is True
    outcome = run_module("tpu_queued_resource", qr_args(api, requeue_tries=1))
    assert not outcome.failed, outcome.msg
    assert [a["why"] for a in outcome["attempts"]] == ["requeued"]
    assert api.node("qr-a")["state"] == "READY"


def test_recreated_makes_the_request_again_from_the_api_spec(api: Api) -> None:
    missing = run_module("tpu_queued_resource", qr_args(api, state="recreated"))
    assert missing.failed and "no spec to create it again from" in missing.msg
    run_module("tpu_queued_resource", qr_args(api, node_count=2, valid_until_duration="600s"))
    before = api.queued("qr-a")
    api.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/qr-a-1:preempt")
    outcome = run_module(
        "tpu_queued_resource",
        api.auth(name="qr-a", zone=ZONE, state="recreated", poll_interval=0.05, timeout=30),
    )
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is True and outcome["state"] == "ACTIVE"
    assert [n["name"] for n in outcome["nodes"]] == ["qr-a-0", "qr-a-1"]
    after = api.queued("qr-a")
    assert api.calls()["DELETE queuedResources.delete"] == 1
    assert api.calls()["POST queuedResources.create"] == 2
    for key in ("tpu", "spot", "queueingPolicy"):
        assert after[key] == before[key], key
    assert api.node("qr-a-1")["state"] == "READY"
