"""The emulator's routes beyond nodes and queued resources: acceleratorTypes.get,
runtimeVersions.list/get, nodes.getGuestAttributes, locations.generateServiceIdentity,
operations.delete/cancel, queuedResources.reset, and enums sent as numbers. Raw HTTP, in-memory
backend."""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tools.tpu_emulator.testing import admin, call, node, serve

P = "proj"
ZONE = "us-central2-b"
LOC = f"/v2/projects/{P}/locations/{ZONE}"
LITE = f"/v2/projects/{P}/locations/us-east1-d"


def state() -> dict[str, Any]:
    return {
        "projects": {
            P: {
                "number": "123456789012",
                "zones": {
                    ZONE: {
                        "nodes": [
                            node("pod", "v4-32"),
                            node("one", "v4-8"),
                            node("off", "v4-8", state="STOPPED"),
                        ]
                    },
                    "us-east1-d": {"accelerator_types": ["v5litepod-*"]},
                },
            }
        }
    }


@pytest.fixture
def server() -> Iterator[Any]:
    with serve(state(), operation_delay=0.05) as srv:
        yield srv


def wait_done(server: Any, op: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        status, got = call(server.root_url, "GET", "/v2/" + op["name"])
        assert status == 200, got
        if got["done"]:
            return got
        time.sleep(0.01)
    raise AssertionError(f"{op['name']} never finished")


# -- acceleratorTypes.get ------------------------------------------------------------------------


def test_accelerator_type_get(server: Any) -> None:
    status, body = call(server.root_url, "GET", f"{LOC}/acceleratorTypes/v4-32")
    assert status == 200
    assert body == {
        "name": f"projects/{P}/locations/{ZONE}/acceleratorTypes/v4-32",
        "type": "v4-32",
    }
    listed = call(server.root_url, "GET", f"{LOC}/acceleratorTypes?pageSize=1")[1]
    assert (
        listed["acceleratorTypes"][0]
        == call(
            server.root_url,
            "GET",
            f"{LOC}/acceleratorTypes/{listed['acceleratorTypes'][0]['type']}",
        )[1]
    )


def test_accelerator_type_get_unknown_or_not_in_the_zone(server: Any) -> None:
    status, body = call(server.root_url, "GET", f"{LOC}/acceleratorTypes/v4-9")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
    assert call(server.root_url, "GET", f"{LITE}/acceleratorTypes/v4-8")[0] == 404
    assert call(server.root_url, "GET", f"{LITE}/acceleratorTypes/v5litepod-4")[0] == 200


# -- runtimeVersions -----------------------------------------------------------------------------


def test_runtime_versions_list_is_the_zone_families_named_versions(server: Any) -> None:
    status, body = call(server.root_url, "GET", f"{LOC}/runtimeVersions")
    assert status == 200
    versions = [v["version"] for v in body["runtimeVersions"]]
    assert versions[0] == "tpu-ubuntu2204-base"
    assert {"v2-alpha-tpuv5", "v2-alpha-tpuv5-lite", "v2-alpha-tpuv6e"} <= set(versions)
    assert not any("*" in v for v in versions) and len(versions) == len(set(versions))
    first = body["runtimeVersions"][0]
    assert first["name"] == f"projects/{P}/locations/{ZONE}/runtimeVersions/{first['version']}"
    lite = call(server.root_url, "GET", f"{LITE}/runtimeVersions")[1]["runtimeVersions"]
    assert [v["version"] for v in lite] == ["v2-alpha-tpuv5-lite"]


def test_runtime_versions_list_pages(server: Any) -> None:
    page = call(server.root_url, "GET", f"{LOC}/runtimeVersions?pageSize=2")[1]
    assert len(page["runtimeVersions"]) == 2 and page["nextPageToken"]
    rest = call(
        server.root_url,
        "GET",
        f"{LOC}/runtimeVersions?pageSize=100&pageToken={page['nextPageToken']}",
    )[1]
    every = call(server.root_url, "GET", f"{LOC}/runtimeVersions")[1]["runtimeVersions"]
    assert page["runtimeVersions"] + rest["runtimeVersions"] == every


def test_runtime_version_get(server: Any) -> None:
    status, body = call(server.root_url, "GET", f"{LOC}/runtimeVersions/v2-alpha-tpuv6e")
    assert (status, body["version"]) == (200, "v2-alpha-tpuv6e")
    # versions the catalog keeps as patterns are found, though the list cannot name them
    assert call(server.root_url, "GET", f"{LOC}/runtimeVersions/tpu-vm-tf-2.16.1-pjrt")[0] == 200
    assert call(server.root_url, "GET", f"{LOC}/runtimeVersions/windows-95")[0] == 404
    assert call(server.root_url, "GET", f"{LITE}/runtimeVersions/tpu-ubuntu2204-base")[0] == 404


def test_runtime_versions_need_their_permission() -> None:
    denied = state()
    denied["projects"][P]["denied_permissions"] = ["tpu.runtimeversions.list"]
    with serve(denied) as srv:
        status, body = call(srv.root_url, "GET", f"{LOC}/runtimeVersions")
        assert status == 403
        assert body["error"]["details"][0]["metadata"]["permission"] == "tpu.runtimeversions.list"
        assert call(srv.root_url, "GET", f"{LOC}/runtimeVersions/tpu-ubuntu2204-base")[0] == 200


# -- generateServiceIdentity ---------------------------------------------------------------------


def test_generate_service_identity_is_the_tpu_service_agent(server: Any) -> None:
    status, body = call(server.root_url, "POST", f"{LOC}:generateServiceIdentity", {})
    assert status == 200
    assert body == {"identity": {"email": "service-123456789012@cloud-tpu.iam.gserviceaccount.com"}}
    missing = f"/v2/projects/{P}/locations/mars-1a:generateServiceIdentity"
    assert call(server.root_url, "POST", missing, {})[0] == 404
    assert (
        call(server.root_url, "POST", "/v2/projects/x/locations/a:generateServiceIdentity")[0]
        == 403
    )


# -- getGuestAttributes --------------------------------------------------------------------------


def test_guest_attributes_one_entry_per_worker_with_its_host_key(server: Any) -> None:
    status, body = call(server.root_url, "POST", f"{LOC}/nodes/pod:getGuestAttributes", {})
    assert status == 200
    workers = body["guestAttributes"]
    assert len(workers) == 4
    keys = []
    for worker in workers:
        assert worker["queryPath"] == ""
        (item,) = worker["queryValue"]["items"]
        assert (item["namespace"], item["key"]) == ("hostkeys", "ssh-ed25519")
        blob = base64.b64decode(item["value"])
        assert blob[:4] == struct.pack(">I", 11) and blob[4:15] == b"ssh-ed25519"
        assert blob[15:19] == struct.pack(">I", 32) and len(blob) == 19 + 32
        keys.append(item["value"])
    assert len(set(keys)) == 4
    again = call(server.root_url, "POST", f"{LOC}/nodes/pod:getGuestAttributes")[1]
    assert [w["queryValue"]["items"][0]["value"] for w in again["guestAttributes"]] == keys


def test_guest_attributes_query_path_and_worker_ids(server: Any) -> None:
    url = f"{LOC}/nodes/pod:getGuestAttributes"
    for path in ("hostkeys", "hostkeys/", "hostkeys/ssh-ed25519"):
        body = call(server.root_url, "POST", url, {"queryPath": path, "workerIds": ["1", "3"]})[1]
        assert [w["queryPath"] for w in body["guestAttributes"]] == [path, path]
        assert all(len(w["queryValue"]["items"]) == 1 for w in body["guestAttributes"])
    for path in ("other/", "hostkeys/ssh-rsa"):
        body = call(server.root_url, "POST", url, {"queryPath": path})[1]
        assert [w["queryValue"] for w in body["guestAttributes"]] == [{}] * 4
    status, body = call(server.root_url, "POST", url, {"workerIds": ["4"]})
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
    assert call(server.root_url, "POST", url, {"workerIds": ["x"]})[0] == 400


def test_guest_attributes_of_a_stopped_or_missing_node(server: Any) -> None:
    body = call(server.root_url, "POST", f"{LOC}/nodes/off:getGuestAttributes", {})[1]
    assert body == {"guestAttributes": [{"queryPath": "", "queryValue": {}}]}
    assert call(server.root_url, "POST", f"{LOC}/nodes/ghost:getGuestAttributes", {})[0] == 404


# -- nodes.stop / start ----------------------------------------------------------------------


def test_stop_then_start_a_single_host_node(server: Any) -> None:
    before = call(server.root_url, "GET", f"{LOC}/nodes/one")[1]
    assert before["state"] == "READY" and before["health"] == "HEALTHY"
    stopped = wait_done(server, call(server.root_url, "POST", f"{LOC}/nodes/one:stop", {})[1])
    assert stopped["response"]["state"] == "STOPPED" and "health" not in stopped["response"]
    started = wait_done(server, call(server.root_url, "POST", f"{LOC}/nodes/one:start", {})[1])
    node_now = started["response"]
    assert (node_now["state"], node_now["health"]) == ("READY", "HEALTHY")
    assert len(node_now["networkEndpoints"]) == 1


@pytest.mark.parametrize(
    ("name", "verb", "message"),
    [
        ("one", "start", "Node one is READY; only a STOPPED node can be started."),
        ("off", "stop", "Node off is STOPPED; only a READY node can be stopped."),
        ("pod", "stop", "Stop is only supported for single-host TPU nodes; node pod (v4-32)"),
        ("pod", "start", "Start is only supported for single-host TPU nodes; node pod (v4-32)"),
    ],
)
def test_stop_and_start_refuse_a_node_in_another_state_or_of_many_hosts(
    server: Any, name: str, verb: str, message: str
) -> None:
    status, body = call(server.root_url, "POST", f"{LOC}/nodes/{name}:{verb}", {})
    assert status == 400, body
    assert body["error"]["status"] == "FAILED_PRECONDITION", body
    assert message in body["error"]["message"], body
    assert call(server.root_url, "GET", f"{LOC}/nodes/{name}")[1]["state"] == (
        "STOPPED" if name == "off" else "READY"
    )


# -- operations.delete / cancel ------------------------------------------------------------------


def test_operation_cancel_is_recorded_and_the_change_still_happens(server: Any) -> None:
    server.emulator.settings["operation_delay"] = 0.3
    status, op = call(server.root_url, "POST", f"{LOC}/nodes/one:stop", {})
    assert status == 200
    assert call(server.root_url, "POST", f"/v2/{op['name']}:cancel", {}) == (200, {})
    done = wait_done(server, op)
    assert done["metadata"]["cancelRequested"] is True
    assert done["response"]["state"] == "STOPPED" and "error" not in done
    # cancelling a finished operation changes nothing
    assert call(server.root_url, "POST", f"/v2/{op['name']}:cancel", {}) == (200, {})


def test_operation_delete_forgets_it(server: Any) -> None:
    op = call(server.root_url, "POST", f"{LOC}/nodes/one:stop", {})[1]
    assert call(server.root_url, "DELETE", f"/v2/{op['name']}") == (200, {})
    assert call(server.root_url, "GET", f"/v2/{op['name']}")[0] == 404
    assert call(server.root_url, "DELETE", f"/v2/{op['name']}")[0] == 404
    assert call(server.root_url, "POST", f"/v2/{op['name']}:cancel", {})[0] == 404
    listed = call(server.root_url, "GET", f"{LOC}/operations")[1]
    assert op["name"] not in [o["name"] for o in listed.get("operations", [])]
    deadline = time.monotonic() + 5
    while call(server.root_url, "GET", f"{LOC}/nodes/one")[1]["state"] != "STOPPED":
        assert time.monotonic() < deadline, "the stop did not go on"
        time.sleep(0.01)


# -- queuedResources.reset -----------------------------------------------------------------------


def queued_body(node_id: str) -> dict[str, Any]:
    spec = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}
    return {"tpu": {"nodeSpec": [{"parent": LOC[4:], "nodeId": node_id, "node": spec}]}}


def qr_state(server: Any, qr_id: str) -> str:
    return call(server.root_url, "GET", f"{LOC}/queuedResources/{qr_id}")[1]["state"]["state"]


def until(server: Any, qr_id: str, word: str) -> None:
    deadline = time.monotonic() + 5
    while qr_state(server, qr_id) != word:
        assert time.monotonic() < deadline, f"{qr_id} never became {word}"
        time.sleep(0.01)


def active_request(server: Any, qr_id: str, node_id: str) -> None:
    """Queued resource ``qr_id`` for node ``node_id``, requested and waited for until ACTIVE."""
    url = f"{LOC}/queuedResources?queuedResourceId={qr_id}"
    wait_done(server, call(server.root_url, "POST", url, queued_body(node_id))[1])
    until(server, qr_id, "ACTIVE")


def test_reset_puts_a_suspended_request_back_in_the_queue(server: Any) -> None:
    active_request(server, "qr", "qn")
    status, body = call(server.root_url, "POST", f"{LOC}/queuedResources/qr:reset", {})
    assert status == 400 and body["error"]["status"] == "FAILED_PRECONDITION"

    admin(server.root_url, "POST", f"projects/{P}/locations/{ZONE}/queuedResources/qr:suspend")
    until(server, "qr", "SUSPENDED")
    status, op = call(server.root_url, "POST", f"{LOC}/queuedResources/qr:reset", {})
    assert status == 200 and op["metadata"]["verb"] == "reset"
    done = wait_done(server, op)
    assert done["response"]["@type"].endswith("QueuedResource")
    until(server, "qr", "ACTIVE")
    assert call(server.root_url, "GET", f"{LOC}/nodes/qn")[1]["state"] == "READY"


def test_reset_a_failed_request_and_a_missing_one(server: Any) -> None:
    active_request(server, "qf", "fn")
    admin(server.root_url, "POST", f"projects/{P}/locations/{ZONE}/queuedResources/qf:fail")
    until(server, "qf", "FAILED")
    wait_done(server, call(server.root_url, "POST", f"{LOC}/queuedResources/qf:reset", {})[1])
    until(server, "qf", "ACTIVE")
    assert call(server.root_url, "POST", f"{LOC}/queuedResources/ghost:reset", {})[0] == 404


# -- enums as numbers ----------------------------------------------------------------------------


def test_enums_sent_as_numbers_are_stored_as_names(server: Any) -> None:
    body = {
        "acceleratorConfig": {"type": 7, "topology": "2x2x2"},
        "runtimeVersion": "tpu-ubuntu2204-base",
        "dataDisks": [{"sourceDisk": "projects/proj/zones/us-central2-b/disks/d", "mode": 2}],
    }
    status, op = call(server.root_url, "POST", f"{LOC}/nodes?nodeId=by-number", body)
    assert status == 200, op
    made = wait_done(server, op)["response"]
    assert made["acceleratorConfig"] == {"type": "V4", "topology": "2x2x2"}
    assert made["dataDisks"][0]["mode"] == "READ_ONLY"
    assert len(made["networkEndpoints"]) == 2
    status, bad = call(
        server.root_url,
        "POST",
        f"{LOC}/nodes?nodeId=bad",
        {"acceleratorConfig": {"type": 99, "topology": "2x2"}, "runtimeVersion": "x"},
    )
    assert status == 400 and bad["error"]["status"] == "INVALID_ARGUMENT"
