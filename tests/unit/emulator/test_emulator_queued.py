"""The emulator's queued-resource states and transitions: provisioning, capacity that arrives
later, validity windows, a zone's next request failing, FAILED and SUSPENDED driven by the admin
routes, preemption of a queued resource's node and the end of a flex-start run duration. In-memory
backend, no Docker."""

from __future__ import annotations

import importlib
import time
import urllib.error
from typing import Any

import pytest

from tests.module_harness import PROJECT, TOKEN, ZONE, Api, serve, state

tpu_api = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api")
PARENT = f"projects/{PROJECT}/locations/{ZONE}"
ADMIN = f"projects/{PROJECT}/locations/{ZONE}/queuedResources"


def request(node_id: str = "qr-a", **extra: Any) -> dict[str, Any]:
    node = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}
    node.update(extra.pop("node", {}))
    body: dict[str, Any] = {
        "tpu": {"nodeSpec": [{"parent": PARENT, "nodeId": node_id, "node": node}]}
    }
    body.update(extra)
    return body


def create(client: Any, body: dict[str, Any], name: str = "qr-a") -> None:
    client.wait_operation(client.create_queued_resource(PROJECT, ZONE, name, body), poll=0.02)


def until(api: Api, name: str, word: str, seconds: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        qr = api.queued(name)
        if qr is not None and qr["state"]["state"] == word:
            return qr
        time.sleep(0.02)
    raise AssertionError(f"{name} never became {word}: {api.queued(name)}")


def test_a_request_with_capacity_becomes_active_with_ready_nodes(api: Api, client: Any) -> None:
    create(client, request())
    until(api, "qr-a", "ACTIVE")
    node = api.node("qr-a")
    assert node["state"] == "READY" and node["queuedResource"].endswith("/queuedResources/qr-a")


def test_a_request_waits_without_capacity_until_the_capacity_arrives() -> None:
    initial = state()
    initial["projects"][PROJECT]["zones"][ZONE] = {"capacity": False}
    with serve(initial, operation_delay=0.0) as api:
        client = tpu_api.TpuClient.from_params(
            {"auth_kind": "accesstoken", "access_token": TOKEN}, base_url=api.url, retries=1
        )
        create(client, request())
        assert api.queued("qr-a")["state"]["state"] == "WAITING_FOR_RESOURCES"
        assert api.node("qr-a") is None
        api.admin("POST", f"{ADMIN}/qr-a:provision")
        until(api, "qr-a", "ACTIVE")
        assert api.node("qr-a")["state"] == "READY"


def test_valid_after_holds_the_request_and_valid_until_fails_it(api: Api, client: Any) -> None:
    create(client, request(queueingPolicy={"validAfterDuration": "0.3s"}))
    assert api.queued("qr-a")["state"]["state"] == "WAITING_FOR_RESOURCES"
    until(api, "qr-a", "ACTIVE")

    api.emulator.projects[PROJECT].zones[ZONE]["capacity"] = False
    create(client, request("qr-b", queueingPolicy={"validUntilDuration": "0.2s"}), "qr-b")
    failed = until(api, "qr-b", "FAILED")
    assert "validity window" in failed["state"]["failedData"]["error"]["message"]


def test_bad_durations_and_flex_start_without_run_duration_are_refused(client: Any) -> None:
    bad = [
        request(queueingPolicy={"validUntilDuration": "1h"}),
        request(runDuration={"maxRunDuration": "four hours"}),
        request(node={"schedulingConfig": {"provisioningModel": "FLEX_START"}}),
        request(
            node={"schedulingConfig": {"provisioningModel": "FLEX_START"}},
            runDuration={"maxRunDuration": "60s"},
            spot={},
        ),
    ]
    for body in bad:
        with pytest.raises(tpu_api.TpuApiError) as caught:
            client.create_queued_resource(PROJECT, ZONE, "qr-a", body)
        assert caught.value.status == 400


def test_the_zones_next_request_fails_once(api: Api, client: Any) -> None:
    api.admin("POST", f"{ADMIN}:failNext", {"message": "stockout"})
    create(client, request())
    failed = api.queued("qr-a")
    assert failed["state"]["state"] == "FAILED"
    assert failed["state"]["failedData"]["error"]["message"] == "stockout"
    assert api.node("qr-a") is None
    create(client, request("qr-b"), "qr-b")
    until(api, "qr-b", "ACTIVE")


def test_fail_and_suspend_delete_the_nodes(api: Api, client: Any) -> None:
    create(client, request())
    until(api, "qr-a", "ACTIVE")
    api.admin("POST", f"{ADMIN}/qr-a:suspend")
    until(api, "qr-a", "SUSPENDED")
    assert api.node("qr-a") is None

    create(client, request("qr-b"), "qr-b")
    until(api, "qr-b", "ACTIVE")
    api.admin("POST", f"{ADMIN}/qr-b:fail", {"message": "host error"})
    failed = until(api, "qr-b", "FAILED")
    assert failed["state"]["failedData"]["error"]["message"] == "host error"
    deadline = time.monotonic() + 5
    while api.node("qr-b") is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert api.node("qr-b") is None


def test_admin_refuses_transitions_the_state_does_not_allow(api: Api, client: Any) -> None:
    create(client, request())
    until(api, "qr-a", "ACTIVE")
    for action in ("provision", "nonsense"):
        with pytest.raises(urllib.error.HTTPError) as caught:
            api.admin("POST", f"{ADMIN}/qr-a:{action}")
        assert caught.value.code in (400, 404)
    api.admin("POST", f"{ADMIN}/qr-a:suspend")
    until(api, "qr-a", "SUSPENDED")
    with pytest.raises(urllib.error.HTTPError):
        api.admin("POST", f"{ADMIN}/qr-a:suspend")


def test_preempting_a_queued_resources_node_suspends_the_request(api: Api, client: Any) -> None:
    create(client, request(spot={}))
    until(api, "qr-a", "ACTIVE")
    api.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/qr-a:preempt")
    assert api.node("qr-a")["state"] == "PREEMPTED"
    assert api.queued("qr-a")["state"] == {"state": "SUSPENDED", "stateInitiator": "SERVICE"}


def test_a_flex_start_request_is_suspended_when_its_run_duration_ends(
    api: Api, client: Any
) -> None:
    create(
        client,
        request(
            node={"schedulingConfig": {"provisioningModel": "FLEX_START"}},
            runDuration={"maxRunDuration": "0.4s"},
        ),
    )
    until(api, "qr-a", "ACTIVE")
    assert api.node("qr-a")["schedulingConfig"]["provisioningModel"] == "FLEX_START"
    until(api, "qr-a", "SUSPENDED")
    assert api.node("qr-a") is None


def test_a_reset_forgets_the_failures_asked_for(api: Api, client: Any) -> None:
    api.admin("POST", f"{ADMIN}:failNext", {"times": 2})
    api.admin("POST", "reset")
    create(client, request())
    until(api, "qr-a", "ACTIVE")
