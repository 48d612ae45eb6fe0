"""cloudtpu.pod.tpu_node against the in-memory emulator (module main() with patched args)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.module_harness import ZONE, Api, run_module, serve, state

V4_16 = {
    "name": "pod-a",
    "zone": ZONE,
    "accelerator_type": "v4-16",
    "runtime_version": "tpu-ubuntu2204-base",
    "labels": {"team": "vision"},
    "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample tpu"},
    "enable_external_ips": True,
    "spot": True,
    "poll_interval": 0.05,
    "timeout": 30,
}


def node_args(api: Api, **changes: Any) -> dict[str, Any]:
    return api.auth(**{**V4_16, **changes})


def create(api: Api, **changes: Any) -> dict[str, Any]:
    outcome = run_module("tpu_node", node_args(api, **changes))
    assert not outcome.failed, outcome.msg
    return outcome.result


def test_create_waits_for_ready_and_returns_workers(api: Api) -> None:
    result = create(api)
    assert result["changed"] is True
    assert result["node"]["state"] == "READY", result["node"]
    stored = api.node("pod-a")
    assert stored is not None and stored["state"] == "READY"
    # v4-16: 16 TensorCores, 8 per host -> 2 workers, each with both addresses.
    ips = [e["ipAddress"] for e in stored["networkEndpoints"]]
    assert [w["internal_ip"] for w in result["workers"]] == ips
    assert all(w["external_ip"] for w in result["workers"]), result["workers"]
    assert [w["worker_id"] for w in result["workers"]] == [0, 1]
    assert stored["schedulingConfig"] == {"spot": True}
    assert stored["labels"] == {"team": "vision"}
    assert api.calls().get("POST nodes.create") == 1


def test_second_create_is_ok_and_calls_nothing_that_changes(api: Api) -> None:
    create(api)
    api.reset_calls()
    again = create(api)
    assert again["changed"] is False, again
    assert again["differences"] == []
    assert api.mutating_calls() == {}, api.calls()
    assert len(again["workers"]) == 2


def test_fixed_field_drift_is_refused_with_every_field_listed(api: Api) -> None:
    create(api)
    api.reset_calls()
    outcome = run_module(
        "tpu_node", node_args(api, accelerator_type="v4-8", runtime_version="v2-alpha-tpuv4")
    )
    assert outcome.failed
    for text in ("accelerator_type: 'v4-16' -> 'v4-8'", "runtime_version", "v2-alpha-tpuv4"):
        assert text in outcome.msg, outcome.msg
    assert "recreate" in outcome.msg
    fields = sorted(d["field"] for d in outcome["differences"])
    assert fields == ["accelerator_type", "runtime_version"]
    assert api.mutating_calls() == {}, api.calls()
    assert api.node("pod-a")["acceleratorType"] == "v4-16"


def test_recreate_deletes_and_creates_with_the_new_spec(api: Api) -> None:
    create(api)
    first_id = api.node("pod-a")["createTime"]
    api.reset_calls()
    time.sleep(0.01)
    result = create(api, accelerator_type="v4-8", recreate=True)
    assert result["changed"] is True and result["recreated"] is True
    stored = api.node("pod-a")
    assert stored["acceleratorType"] == "v4-8"
    assert stored["createTime"] != first_id
    # Options the task did not change are kept from the old node.
    assert stored["labels"] == {"team": "vision"}
    assert stored["schedulingConfig"] == {"spot": True}
    assert api.mutating_calls() == {"DELETE nodes.delete": 1, "POST nodes.create": 1}
    assert len(result["workers"]) == 1


def test_recreate_waits_for_the_deletion_even_without_wait(api: Api) -> None:
    create(api)
    result = create(api, accelerator_type="v4-8", recreate=True, wait=False)
    assert result["recreated"] is True
    assert api.node("pod-a")["acceleratorType"] == "v4-8"


def test_labels_are_changed_in_place(api: Api) -> None:
    create(api)
    api.reset_calls()
    result = create(api, labels={"team": "audio", "owner": "ana"})
    assert result["changed"] is True and result["updated_fields"] == ["labels"]
    assert api.node("pod-a")["labels"] == {"team": "audio", "owner": "ana"}
    assert api.mutating_calls() == {"PATCH nodes.patch": 1}, api.calls()


def test_delete_then_delete_again(api: Api) -> None:
    create(api)
    gone = run_module("tpu_node", node_args(api, state="absent"))
    assert not gone.failed and gone["changed"] is True
    assert api.node("pod-a") is None
    again = run_module("tpu_node", node_args(api, state="absent"))
    assert not again.failed and again["changed"] is False


@pytest.mark.parametrize(
    ("exists", "changes", "expected_after"),
    [
        (False, {}, None),
        (True, {"state": "absent"}, "v4-16"),
        (True, {"labels": {"team": "audio"}}, "v4-16"),
        (True, {"accelerator_type": "v4-8", "recreate": True}, "v4-16"),
    ],
    ids=["create", "delete", "update", "recreate"],
)
def test_check_mode_reports_a_change_and_makes_no_mutating_call(
    api: Api, exists: bool, changes: dict[str, Any], expected_after: str | None
) -> None:
    if exists:
        create(api)
    before = api.node("pod-a")
    api.reset_calls()
    outcome = run_module("tpu_node", node_args(api, **changes), check=True, diff=True)
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is True
    assert api.mutating_calls() == {}, api.calls()
    after = api.node("pod-a")
    assert after == before
    assert (after or {}).get("acceleratorType") == expected_after
    assert outcome["diff"]["before"] != outcome["diff"]["after"], outcome["diff"]


def test_diff_shows_the_label_change(api: Api) -> None:
    create(api)
    outcome = run_module("tpu_node", node_args(api, labels={"team": "audio"}), diff=True)
    assert outcome["diff"]["before"]["labels"] == {"team": "vision"}
    assert outcome["diff"]["after"]["labels"] == {"team": "audio"}


def test_operation_slower_than_timeout_fails_clearly() -> None:
    with serve(operation_delay=3.0) as slow:
        started = time.monotonic()
        outcome = run_module("tpu_node", node_args(slow, timeout=1, poll_interval=0.1))
        elapsed = time.monotonic() - started
    assert outcome.failed
    assert outcome["reason"] == "TIMEOUT", outcome.result
    assert "not done after 1 s" in outcome.msg, outcome.msg
    assert elapsed < 2.5, f"the module waited {elapsed:.1f} s for a 1 s timeout"


def test_permission_denied_is_surfaced_with_the_api_message() -> None:
    denied = state(denied_permissions=["tpu.nodes.create"])
    with serve(denied) as api:
        outcome = run_module("tpu_node", node_args(api))
    assert outcome.failed
    assert outcome["status"] == 403
    assert "tpu.nodes.create" in outcome.msg and "roles/tpu.admin" in outcome.msg, outcome.msg
    assert "Permission 'tpu.nodes.create' denied" in outcome["api_message"], outcome.result


def test_unknown_accelerator_type_is_refused_with_the_api_message(api: Api) -> None:
    outcome = run_module("tpu_node", node_args(api, accelerator_type="v4-7"))
    assert outcome.failed
    assert outcome["status"] == 400
    assert "Accelerator type 'v4-7' is not supported" in outcome.msg, outcome.msg
    assert api.node("pod-a") is None


def test_create_without_runtime_version_boots_the_generations_image(api: Api) -> None:
    args = node_args(api)
    del args["runtime_version"]
    outcome = run_module("tpu_node", args)
    assert not outcome.failed, outcome.msg
    assert api.node("pod-a")["runtimeVersion"] == "tpu-ubuntu2204-base"


def test_create_without_runtime_version_of_an_unknown_family_names_the_option(api: Api) -> None:
    args = node_args(api, accelerator_type="v9-8")
    del args["runtime_version"]
    outcome = run_module("tpu_node", args)
    assert outcome.failed
    assert "runtime_version" in outcome.msg, outcome.msg
    assert api.mutating_calls() == {}


def test_more_than_one_scheduling_choice_is_refused(api: Api) -> None:
    outcome = run_module("tpu_node", node_args(api, preemptible=True))
    assert outcome.failed
    assert "spot" in outcome.msg and "preemptible" in outcome.msg, outcome.msg


def test_stop_and_start_a_single_host_node(api: Api) -> None:
    single = {
        "name": "dev",
        "accelerator_type": "v5litepod-8",
        "spot": None,
        "runtime_version": None,
    }
    create(api, **single)
    assert api.node("dev")["runtimeVersion"] == "v2-alpha-tpuv5-lite"
    stopped = run_module("tpu_node", node_args(api, state="stopped", **single))
    assert not stopped.failed, stopped.msg
    assert stopped["changed"] is True and api.node("dev")["state"] == "STOPPED"
    again = run_module("tpu_node", node_args(api, state="stopped", **single))
    assert again["changed"] is False
    started = run_module("tpu_node", node_args(api, state="started", **single))
    assert not started.failed, started.msg
    assert started["changed"] is True and api.node("dev")["state"] == "READY"
    assert started["node"]["state"] == "READY"


def test_stopping_a_multi_host_node_surfaces_the_api_refusal(api: Api) -> None:
    create(api)
    outcome = run_module("tpu_node", node_args(api, state="stopped"))
    assert outcome.failed
    assert "only supported for single-host" in outcome.msg, outcome.msg


def test_stopping_a_missing_node_says_so(api: Api) -> None:
    outcome = run_module("tpu_node", node_args(api, state="stopped"))
    assert outcome.failed
    assert "does not exist" in outcome.msg, outcome.msg


def test_preempted_node_warns_when_present_and_refuses_to_start(api: Api) -> None:
    create(api)
    api.admin("POST", f"projects/demo/locations/{ZONE}/nodes/pod-a:preempt")
    present = run_module("tpu_node", node_args(api))
    assert not present.failed and present["changed"] is False
    assert any("PREEMPTED" in w for w in present.warnings), present.warnings
    started = run_module("tpu_node", node_args(api, state="started"))
    assert started.failed
    assert "PREEMPTED" in started.msg and "recover" in started.msg, started.msg


ALICE = "alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAlice alice"
TPU_NEW = "tpu:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINewKey tpu"


def test_another_users_key_survives_a_re_provision(api: Api) -> None:
    """Someone added their key to the node; the same task run again keeps it."""
    create(api, metadata={"ssh-keys": V4_16["metadata"]["ssh-keys"] + "\n" + ALICE})
    api.reset_calls()
    again = create(api)  # the original task: only tpu's key, as provision.yml sends it
    assert again["changed"] is False, again.get("differences")
    assert api.mutating_calls() == {}, api.calls()
    keys = api.node("pod-a")["metadata"]["ssh-keys"].splitlines()
    assert ALICE in keys and V4_16["metadata"]["ssh-keys"] in keys


def test_the_login_users_key_is_replaced_and_the_others_kept(api: Api) -> None:
    create(api, metadata={"ssh-keys": ALICE + "\n" + V4_16["metadata"]["ssh-keys"]})
    result = create(api, metadata={"ssh-keys": TPU_NEW, "startup-script": "echo hi"})
    assert result["changed"] is True and result["updated_fields"] == ["metadata"]
    metadata = api.node("pod-a")["metadata"]
    assert metadata["ssh-keys"].splitlines() == [ALICE, TPU_NEW]
    assert metadata["startup-script"] == "echo hi"
    assert create(api, metadata={"ssh-keys": TPU_NEW})["changed"] is False


def test_replace_mode_sets_exactly_the_given_metadata(api: Api) -> None:
    create(api, metadata={"ssh-keys": ALICE + "\n" + V4_16["metadata"]["ssh-keys"], "x": "1"})
    create(api, metadata_mode="replace")
    assert api.node("pod-a")["metadata"] == V4_16["metadata"]


def test_a_500_on_the_create_is_looked_at_then_sent_again(api: Api) -> None:
    rule = {"path": "*/nodes", "method": "POST", "statuses": [500]}
    api.admin("POST", "faults", {"rules": [rule]})
    result = create(api, retries=2)
    assert result["changed"] is True and result["adopted"] is False
    assert api.node("pod-a")["state"] == "READY"
    calls = api.calls()
    assert calls.get("POST nodes.create") == 2, calls


def test_a_409_for_a_node_with_the_spec_asked_for_is_adopted(api: Api) -> None:
    create(api)
    api.reset_calls()
    # The first look misses the node (another run is making it at the same moment): the create
    # answers 409 ALREADY_EXISTS, and the node with this spec is taken as it is.
    rule = {"path": "*/nodes/pod-a", "method": "GET", "statuses": [404]}
    api.admin("POST", "faults", {"rules": [rule]})
    result = create(api)
    assert result["adopted"] is True and result["changed"] is False, result
    assert result["node"]["state"] == "READY" and len(result["workers"]) == 2
    assert api.mutating_calls() == {"POST nodes.create": 1}, api.calls()


def test_a_409_for_a_node_of_another_type_is_refused_with_the_differences(api: Api) -> None:
    create(api)
    rule = {"path": "*/nodes/pod-a", "method": "GET", "statuses": [404]}
    api.admin("POST", "faults", {"rules": [rule]})
    outcome = run_module("tpu_node", node_args(api, accelerator_type="v4-8"))
    assert outcome.failed
    assert "accelerator_type: 'v4-16' -> 'v4-8'" in outcome.msg, outcome.msg
    assert api.node("pod-a")["acceleratorType"] == "v4-16"
