"""The TPU v2 API client (plugins/module_utils/tpu_api.py) against the emulator, in-process:
paging, retries, unreachable locations, nodes and queued resources (its errors:
test_tpu_api_errors.py)."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    DEFAULT_BASE_URL,
    TpuApiError,
    TpuClient,
)

from tests.unit.api.tpu_api_server import PROJECT, Recorder, api_requests, client_for, state
from tools.tpu_emulator.testing import TOKEN, admin, serve

# -- paging -------------------------------------------------------------------------------------


def test_list_follows_page_tokens_one_request_per_page(server: Any, client: TpuClient) -> None:
    nodes, unreachable = client.list_nodes(PROJECT, "-", page_size=2)
    assert [n["name"].rsplit("/", 1)[1] for n in nodes] == [
        "pod-a",
        "pod-b",
        "pod-c",
        "solo",
        "trill",
    ]
    assert unreachable == []
    assert client.request_count == 3
    assert api_requests(server) == 3


def test_list_one_zone(client: TpuClient) -> None:
    nodes, _ = client.list_nodes(PROJECT, "us-east1-d", page_size=1)
    assert {n["name"] for n in nodes} == {
        f"projects/{PROJECT}/locations/us-east1-d/nodes/solo",
        f"projects/{PROJECT}/locations/us-east1-d/nodes/trill",
    }
    assert client.request_count == 2


def test_list_locations(client: TpuClient) -> None:
    zones = [loc["locationId"] for loc in client.list_locations(PROJECT, page_size=2)]
    assert zones == ["europe-west4-a", "us-central2-b", "us-east1-d"]


class _Answer:
    def __init__(self, status: int, payload: Any = None, text: str = "") -> None:
        self.status_code = status
        self._payload = payload
        self.text = text
        self.content = text.encode() if text else b"{}"
        self.headers: dict[str, str] = {}

    def json(self) -> Any:
        if self._payload is None:
            raise ValueError("not JSON")
        return self._payload


class _ScriptedSession:
    """A session that answers from a list, for server misbehaviour the emulator does not do."""

    def __init__(self, answers: list[_Answer]) -> None:
        self.answers = answers
        self.calls = 0

    def request(self, *args: Any, **kwargs: Any) -> _Answer:
        self.calls += 1
        return self.answers.pop(0)


def test_a_repeated_page_token_stops_instead_of_looping() -> None:
    page = {"nodes": [{"name": "x"}], "nextPageToken": "same"}
    session = _ScriptedSession([_Answer(200, page), _Answer(200, page), _Answer(200, page)])
    client = TpuClient(None, base_url="http://127.0.0.1:9/v2", session=session)
    with pytest.raises(TpuApiError, match="same page token twice") as info:
        client.list_nodes("p")
    assert info.value.reason == "PAGINATION_LOOP"
    assert session.calls == 2


def test_a_body_that_is_not_json_names_the_base_url() -> None:
    session = _ScriptedSession([_Answer(200, None, text="<html>proxy login</html>")])
    client = TpuClient(None, base_url="http://127.0.0.1:9/v2", session=session)
    with pytest.raises(TpuApiError, match="is base_url the API root") as info:
        client.get_node("p", "z", "n")
    assert info.value.reason == "BAD_RESPONSE"


# -- retries ------------------------------------------------------------------------------------


def test_503_twice_then_success(server: Any, sleeps: Recorder) -> None:
    admin(
        server.root_url, "POST", "faults", {"rules": [{"path": "*/nodes", "statuses": [503, 503]}]}
    )
    client = client_for(server, sleeps, retries=5)
    nodes, _ = client.list_nodes(PROJECT)
    assert len(nodes) == 5
    assert client.request_count == 3
    assert len(sleeps.delays) == 2
    # exponential: the second wait's ceiling is twice the first's (with jitter in [ceil/2, ceil])
    assert 0.005 <= sleeps.delays[0] <= 0.01
    assert 0.01 <= sleeps.delays[1] <= 0.02
    assert admin(server.root_url, "GET", "stats")["by_status"] == {"503": 2, "200": 1}


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_transient_errors_are_retried_until_the_attempts_run_out(
    server: Any, sleeps: Recorder, status: int
) -> None:
    admin(server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": status}]})
    client = client_for(server, sleeps, retries=3)
    with pytest.raises(TpuApiError, match=f"kept answering {status} after 3 attempt") as info:
        client.list_nodes(PROJECT)
    assert info.value.status == status
    assert client.request_count == 3
    assert len(sleeps.delays) == 2


NEW_NODE = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}


def fail_node_creates(server: Any, status: int) -> None:
    """The emulator answers the next node create with ``status`` (its fault rules)."""
    rule = {"path": "*/nodes", "method": "POST", "statuses": [status]}
    admin(server.root_url, "POST", "faults", {"rules": [rule]})


def test_create_is_not_repeated_after_a_500(server: Any, sleeps: Recorder) -> None:
    fail_node_creates(server, 500)
    client = client_for(server, sleeps)
    with pytest.raises(TpuApiError) as info:
        client.create_node(PROJECT, "us-central2-b", "new-node", NEW_NODE)
    assert info.value.status == 500
    assert client.request_count == 1


def test_create_is_repeated_after_a_503(server: Any, sleeps: Recorder) -> None:
    fail_node_creates(server, 503)
    client = client_for(server, sleeps)
    op = client.create_node(PROJECT, "us-central2-b", "new-node", NEW_NODE)
    assert op["metadata"]["verb"] == "create"
    assert client.request_count == 2


def test_backoff_is_capped_and_honours_retry_after() -> None:
    client = TpuClient(
        None, base_url=DEFAULT_BASE_URL, session=object(), backoff=1.0, max_sleep=5.0, rand=max
    )
    assert [client.backoff_delay(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert client.backoff_delay(1, retry_after="3") == 3.0
    assert client.backoff_delay(1, retry_after="60") == 5.0
    assert client.backoff_delay(1, retry_after="soon") == 1.0
    low = TpuClient(None, base_url=DEFAULT_BASE_URL, session=object(), backoff=1.0, rand=min)
    assert low.backoff_delay(3) == 2.0


def test_an_unreachable_endpoint_is_retried_then_explained(sleeps: Recorder) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    params = {"auth_kind": "accesstoken", "access_token": TOKEN}
    client = TpuClient.from_params(
        params, base_url=f"http://127.0.0.1:{port}/v2", retries=2, backoff=0.01, sleep=sleeps
    )
    with pytest.raises(TpuApiError, match=r"Cannot reach the TPU API .* after 2 attempt") as info:
        client.list_nodes(PROJECT)
    assert info.value.reason == "UNREACHABLE"
    assert len(sleeps.delays) == 1


# -- unreachable locations and the wildcard -----------------------------------------------------


def test_unreachable_location_becomes_a_warning(server: Any, client: TpuClient) -> None:
    admin(server.root_url, "POST", "faults", {"unreachable": {PROJECT: ["us-east1-d"]}})
    nodes, unreachable = client.list_nodes(PROJECT)
    assert unreachable == ["us-east1-d"]
    assert {n["name"].split("/")[3] for n in nodes} == {"us-central2-b"}
    nodes, warnings = client.collect_nodes(PROJECT)
    assert len(nodes) == 3
    assert len(warnings) == 1
    assert "location us-east1-d of project demo-project was unreachable" in warnings[0]


def test_refused_wildcard_falls_back_to_zone_by_zone(sleeps: Recorder) -> None:
    refusing = state()
    refusing["settings"] = {"wildcard": False}
    with serve(refusing) as srv:
        client = client_for(srv, sleeps)
        nodes, warnings = client.collect_nodes(PROJECT)
        stats = admin(srv.root_url, "GET", "stats")
    assert len(nodes) == 5
    assert "refused the all-zones wildcard" in warnings[0]
    # one refused wildcard list, one locations list, one list per zone
    assert stats["by_route"] == {"GET nodes.list": 4, "GET locations.list": 1}


def test_named_zones_are_listed_one_by_one(client: TpuClient) -> None:
    nodes, warnings = client.collect_nodes(PROJECT, ["us-east1-d", "europe-west4-a"])
    assert sorted(n["name"].rsplit("/", 1)[1] for n in nodes) == ["solo", "trill"]
    assert warnings == []
    assert client.request_count == 2


# -- node lifecycle and operations --------------------------------------------------------------


def test_create_wait_get_delete(server: Any, client: TpuClient) -> None:
    body = {
        "acceleratorType": "v5litepod-16",
        "runtimeVersion": "v2-alpha-tpuv5-lite",
        "networkConfig": {"enableExternalIps": False},
        "labels": {"owner": "me"},
    }
    op = client.create_node(PROJECT, "us-central2-b", "fresh", body)
    assert op["done"] is False
    assert op["name"].startswith(f"projects/{PROJECT}/locations/us-central2-b/operations/")
    done = client.wait_operation(op, timeout=10, poll=0.01)
    assert done["done"] is True
    created = client.get_node(PROJECT, "us-central2-b", "fresh")
    assert created["state"] == "READY"
    assert len(created["networkEndpoints"]) == 4
    assert all("accessConfig" not in e for e in created["networkEndpoints"])
    assert created["labels"] == {"owner": "me"}
    client.wait_operation(
        client.delete_node(PROJECT, "us-central2-b", "fresh"), timeout=10, poll=0.01
    )
    assert client.find_node(PROJECT, "us-central2-b", "fresh") is None


def test_node_is_creating_until_the_operation_completes(sleeps: Recorder) -> None:
    with serve(state(), operation_delay=0.3) as srv:
        client = client_for(srv, sleeps)
        body = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}
        op = client.create_node(PROJECT, "us-central2-b", "slow", body)
        assert client.get_node(PROJECT, "us-central2-b", "slow")["state"] == "CREATING"
        client.wait_operation(op, timeout=10, poll=0.02)
        assert client.get_node(PROJECT, "us-central2-b", "slow")["state"] == "READY"


def test_wait_operation_times_out_with_advice(sleeps: Recorder) -> None:
    with serve(state(), operation_delay=5) as srv:
        client = client_for(srv, sleeps)
        body = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}
        op = client.create_node(PROJECT, "us-central2-b", "slower", body)
        with pytest.raises(TpuApiError, match="not done after 0 s") as info:
            client.wait_operation(op, timeout=0.05, poll=0.01)
    assert info.value.reason == "TIMEOUT"


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        (
            {"acceleratorType": "v4-9", "runtimeVersion": "x"},
            "Accelerator type 'v4-9' is not supported",
        ),
        ({"acceleratorType": "v5litepod-3", "runtimeVersion": "x"}, "v5litepod-3"),
        ({"runtimeVersion": "x"}, "accelerator_type or accelerator_config"),
        ({"acceleratorType": "v4-8"}, "runtime_version"),
    ],
)
def test_invalid_create_requests_are_refused(
    client: TpuClient, body: dict[str, Any], phrase: str
) -> None:
    with pytest.raises(TpuApiError) as info:
        client.create_node(PROJECT, "us-central2-b", "bad", body)
    assert info.value.status == 400
    assert phrase in str(info.value)
    assert client.find_node(PROJECT, "us-central2-b", "bad") is None


def test_existing_node_id_is_a_conflict(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.create_node(
            PROJECT, "us-central2-b", "pod-a", {"acceleratorType": "v4-8", "runtimeVersion": "x"}
        )
    assert info.value.status == 409
    assert info.value.reason == "ALREADY_EXISTS"


def test_stop_and_start_a_single_host_node(client: TpuClient) -> None:
    client.wait_operation(client.stop_node(PROJECT, "us-east1-d", "solo"), timeout=10, poll=0.01)
    assert client.get_node(PROJECT, "us-east1-d", "solo")["state"] == "STOPPED"
    client.wait_operation(client.start_node(PROJECT, "us-east1-d", "solo"), timeout=10, poll=0.01)
    assert client.get_node(PROJECT, "us-east1-d", "solo")["state"] == "READY"


def test_stop_is_refused_for_a_multi_host_node(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.stop_node(PROJECT, "us-central2-b", "pod-a")
    assert info.value.status == 400
    assert "only supported for single-host" in str(info.value)
    assert client.get_node(PROJECT, "us-central2-b", "pod-a")["state"] == "READY"


# -- queued resources ---------------------------------------------------------------------------


def test_queued_resource_lifecycle(client: TpuClient) -> None:
    body = {
        "tpu": {
            "nodeSpec": [
                {
                    "parent": f"projects/{PROJECT}/locations/us-east1-d",
                    "nodeId": "qr-node",
                    "node": {"acceleratorType": "v6e-8", "runtimeVersion": "v2-alpha-tpuv6e"},
                }
            ]
        },
        "spot": {},
    }
    client.wait_operation(
        client.create_queued_resource(PROJECT, "us-east1-d", "qr1", body), timeout=10, poll=0.01
    )
    deadline = time.monotonic() + 10
    while client.get_queued_resource(PROJECT, "us-east1-d", "qr1")["state"]["state"] != "ACTIVE":
        assert time.monotonic() < deadline, "queued resource never became ACTIVE"
        time.sleep(0.01)
    created = client.get_node(PROJECT, "us-east1-d", "qr-node")
    assert created["state"] == "READY"
    assert created["schedulingConfig"]["spot"] is True
    assert created["queuedResource"].endswith("/queuedResources/qr1")
    items, _ = client.list_queued_resources(PROJECT, "us-east1-d")
    assert [q["name"].rsplit("/", 1)[1] for q in items] == ["qr1"]

    with pytest.raises(TpuApiError, match="force=true"):
        client.delete_queued_resource(PROJECT, "us-east1-d", "qr1")
    client.wait_operation(
        client.delete_queued_resource(PROJECT, "us-east1-d", "qr1", force=True),
        timeout=10,
        poll=0.01,
    )
    assert client.find_node(PROJECT, "us-east1-d", "qr-node") is None
    assert client.list_queued_resources(PROJECT, "us-east1-d")[0] == []
