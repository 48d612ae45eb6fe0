"""Google's own client library against the emulator, for nodes (official_client_support.py says
how and why): list, get, create, stop and start, update, delete, guest attributes, the errors of
each and those a fault plan injects; and that every RPC of the client is driven by one of the two
files (this one and test_official_client_service.py).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import tpu_v2
from google.protobuf import empty_pb2, field_mask_pb2

from tests.integration import official_client_support as support
from tests.integration.official_client_support import PARENT, POLL, PROJECT, status_word
from tools.tpu_emulator.testing import admin

server, client = support.server, support.client


def test_every_public_rpc_of_the_client_is_covered() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(tpu_v2.TpuClient, inspect.isfunction)
        if not name.startswith("_")
        and "request" in inspect.signature(member).parameters
        and name != "get_mtls_endpoint_and_cert_source"
    }
    assert methods == support.COVERED, methods ^ support.COVERED


def test_the_client_talks_plain_http_to_the_emulator(client: tpu_v2.TpuClient, server: Any) -> None:
    assert client.api_endpoint == server.root_url
    assert client.get_node(name=f"{PARENT}/nodes/pod-a").name == f"{PARENT}/nodes/pod-a"


# -- nodes ---------------------------------------------------------------------------------------


def test_list_nodes_pages_and_parses(client: tpu_v2.TpuClient) -> None:
    pager = client.list_nodes(request={"parent": PARENT, "page_size": 2})
    pages = list(pager.pages)
    assert [len(page.nodes) for page in pages] == [2, 1]
    assert pages[0].next_page_token and not pages[1].next_page_token
    names = [n.name.rsplit("/", 1)[-1] for page in pages for n in page.nodes]
    assert names == ["one", "pod-a", "two"]
    every = list(client.list_nodes(parent=f"projects/{PROJECT}/locations/-"))
    assert len(every) == 3


def test_get_node_fields(client: tpu_v2.TpuClient) -> None:
    got = client.get_node(name=f"{PARENT}/nodes/pod-a")
    assert got.state == tpu_v2.Node.State.READY
    assert got.health == tpu_v2.Node.Health.HEALTHY
    assert got.accelerator_type == "v4-32"
    assert got.runtime_version == "tpu-ubuntu2204-base"
    assert dict(got.labels) == {"team": "ml"}
    assert got.api_version == tpu_v2.Node.ApiVersion.V2
    assert len(got.network_endpoints) == 4
    assert all(e.ip_address and e.access_config.external_ip for e in got.network_endpoints)
    assert got.create_time.year >= 2024


def test_create_node_resolves_to_a_ready_node(client: tpu_v2.TpuClient) -> None:
    body = tpu_v2.Node(
        accelerator_type="v4-16",
        runtime_version="tpu-ubuntu2204-base",
        labels={"job": "oracle"},
        network_config=tpu_v2.NetworkConfig(enable_external_ips=False),
    )
    lro = client.create_node(parent=PARENT, node=body, node_id="fresh")
    meta = lro.metadata
    assert isinstance(meta, tpu_v2.OperationMetadata)
    assert meta.verb == "create" and meta.target == f"{PARENT}/nodes/fresh"
    made = lro.result(timeout=10, polling=POLL)
    assert isinstance(made, tpu_v2.Node)
    assert made.name == f"{PARENT}/nodes/fresh"
    assert made.state == tpu_v2.Node.State.READY
    assert made.accelerator_type == "v4-16"
    assert dict(made.labels) == {"job": "oracle"}
    assert len(made.network_endpoints) == 2
    assert not any(e.access_config.external_ip for e in made.network_endpoints)
    assert client.get_node(name=made.name).state == tpu_v2.Node.State.READY


def test_create_node_with_an_accelerator_config_sent_as_a_number(
    client: tpu_v2.TpuClient,
) -> None:
    # the REST transport sends enums as integers: V4 is 7 on the wire
    body = tpu_v2.Node(
        accelerator_config=tpu_v2.AcceleratorConfig(
            type_=tpu_v2.AcceleratorConfig.Type.V4, topology="2x2x2"
        ),
        runtime_version="tpu-ubuntu2204-base",
    )
    made = client.create_node(parent=PARENT, node=body, node_id="by-config").result(
        timeout=10, polling=POLL
    )
    assert made.accelerator_config.type_ == tpu_v2.AcceleratorConfig.Type.V4
    assert made.accelerator_config.topology == "2x2x2"
    assert len(made.network_endpoints) == 2  # v4-16: two hosts


def test_create_node_errors(client: tpu_v2.TpuClient) -> None:
    good = tpu_v2.Node(accelerator_type="v4-8", runtime_version="tpu-ubuntu2204-base")
    with pytest.raises(exceptions.Conflict) as exists:
        client.create_node(parent=PARENT, node=good, node_id="one")
    assert exists.value.code == 409 and status_word(exists.value) == "ALREADY_EXISTS"
    wrong = tpu_v2.Node(accelerator_type="v4-8", runtime_version="v2-alpha-tpuv6e")
    with pytest.raises(exceptions.BadRequest) as invalid:
        client.create_node(parent=PARENT, node=wrong, node_id="bad")
    assert invalid.value.code == 400 and status_word(invalid.value) == "INVALID_ARGUMENT"
    assert "runtime_version" in invalid.value.message
    unknown = tpu_v2.Node(accelerator_type="v4-9", runtime_version="tpu-ubuntu2204-base")
    with pytest.raises(exceptions.BadRequest):
        client.create_node(parent=PARENT, node=unknown, node_id="bad")
    with pytest.raises(exceptions.NotFound) as zone:
        client.create_node(parent=f"projects/{PROJECT}/locations/mars-1a", node=good, node_id="x")
    assert zone.value.code == 404


def test_get_node_missing_is_not_found(client: tpu_v2.TpuClient) -> None:
    with pytest.raises(exceptions.NotFound) as missing:
        client.get_node(name=f"{PARENT}/nodes/ghost")
    assert missing.value.code == 404 and status_word(missing.value) == "NOT_FOUND"


def test_stop_and_start_a_single_host_node(client: tpu_v2.TpuClient) -> None:
    name = f"{PARENT}/nodes/one"
    stopped = client.stop_node(request={"name": name}).result(timeout=10, polling=POLL)
    assert stopped.state == tpu_v2.Node.State.STOPPED
    assert not any(e.access_config.external_ip for e in stopped.network_endpoints)
    started = client.start_node(request={"name": name}).result(timeout=10, polling=POLL)
    assert started.state == tpu_v2.Node.State.READY
    assert started.network_endpoints[0].access_config.external_ip


def test_stop_a_pod_is_refused(client: tpu_v2.TpuClient) -> None:
    with pytest.raises(exceptions.BadRequest) as refused:
        client.stop_node(request={"name": f"{PARENT}/nodes/pod-a"})
    assert status_word(refused.value) == "FAILED_PRECONDITION"


def test_update_node_labels_and_metadata(client: tpu_v2.TpuClient) -> None:
    change = tpu_v2.Node(
        name=f"{PARENT}/nodes/two", labels={"owner": "x"}, metadata={"startup-script": "true"}
    )
    mask = field_mask_pb2.FieldMask(paths=["labels", "metadata"])
    updated = client.update_node(node=change, update_mask=mask).result(timeout=10, polling=POLL)
    assert dict(updated.labels) == {"owner": "x"}
    assert dict(updated.metadata) == {"startup-script": "true"}
    assert updated.state == tpu_v2.Node.State.READY
    with pytest.raises(exceptions.BadRequest):
        client.update_node(
            node=change, update_mask=field_mask_pb2.FieldMask(paths=["accelerator_type"])
        )


def test_delete_node_resolves_to_empty_and_the_node_is_gone(client: tpu_v2.TpuClient) -> None:
    lro = client.delete_node(name=f"{PARENT}/nodes/two")
    assert lro.metadata.verb == "delete"
    # delete_node's operation resolves to google.protobuf.Empty
    assert lro.result(timeout=10, polling=POLL) == empty_pb2.Empty()
    with pytest.raises(exceptions.NotFound):
        client.get_node(name=f"{PARENT}/nodes/two")
    with pytest.raises(exceptions.NotFound):
        client.delete_node(name=f"{PARENT}/nodes/two")


def test_permission_denied_from_fault_injection(client: tpu_v2.TpuClient, server: Any) -> None:
    admin(
        server.root_url,
        "POST",
        "faults",
        {
            "rules": [
                {"path": f"projects/{PROJECT}/locations/*/nodes*", "error": "PERMISSION_DENIED"}
            ]
        },
    )
    with pytest.raises(exceptions.Forbidden) as denied:
        client.get_node(name=f"{PARENT}/nodes/one")
    assert denied.value.code == 403 and status_word(denied.value) == "PERMISSION_DENIED"
    assert denied.value.reason == "IAM_PERMISSION_DENIED"
    assert denied.value.domain == "tpu.googleapis.com"
    assert denied.value.metadata["permission"] == "tpu.nodes.get"
    with pytest.raises(exceptions.Forbidden):
        list(client.list_nodes(parent=PARENT))
    # the other resources still answer
    assert client.get_location({"name": PARENT}).location_id == support.ZONE


def test_service_disabled_from_fault_injection(client: tpu_v2.TpuClient, server: Any) -> None:
    admin(
        server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": "SERVICE_DISABLED"}]}
    )
    with pytest.raises(exceptions.Forbidden) as disabled:
        list(client.list_accelerator_types(parent=PARENT))
    assert disabled.value.reason == "SERVICE_DISABLED"
    assert disabled.value.metadata["consumer"] == f"projects/{support.NUMBER}"


# -- guest attributes ------------------------------------------------------------------------------


def test_get_guest_attributes(client: tpu_v2.TpuClient) -> None:
    name = f"{PARENT}/nodes/pod-a"
    every = client.get_guest_attributes(request={"name": name})
    assert isinstance(every, tpu_v2.GetGuestAttributesResponse)
    assert len(every.guest_attributes) == 4  # one per worker of a v4-32
    keys = []
    for worker in every.guest_attributes:
        (item,) = worker.query_value.items
        assert (item.namespace, item.key) == ("hostkeys", "ssh-ed25519")
        assert item.value.startswith("AAAAC3NzaC1lZDI1NTE5")  # an ssh-ed25519 key blob
        keys.append(item.value)
    assert len(set(keys)) == 4
    again = client.get_guest_attributes(request={"name": name})
    assert [w.query_value.items[0].value for w in again.guest_attributes] == keys

    one = client.get_guest_attributes(
        request={"name": name, "query_path": "hostkeys/", "worker_ids": ["2"]}
    )
    assert len(one.guest_attributes) == 1
    assert one.guest_attributes[0].query_path == "hostkeys/"
    assert one.guest_attributes[0].query_value.items[0].value == keys[2]
    none = client.get_guest_attributes(request={"name": name, "query_path": "other/"})
    assert [len(w.query_value.items) for w in none.guest_attributes] == [0] * 4
    with pytest.raises(exceptions.BadRequest):
        client.get_guest_attributes(request={"name": name, "worker_ids": ["4"]})
    with pytest.raises(exceptions.NotFound):
        client.get_guest_attributes(request={"name": f"{PARENT}/nodes/ghost"})
