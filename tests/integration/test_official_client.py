"""Google's own client library as the emulator's oracle.

``google-cloud-tpu`` (``google.cloud.tpu_v2.TpuClient``, REST transport) drives the emulator
through every RPC method it has: each answer must parse into the client's types, long-running
operations resolve to what the service documents, lists page, and errors become the
``google.api_core`` exceptions the real service's answers become. Over REST the class follows
the HTTP status (400 BadRequest, 403 Forbidden, 404 NotFound, 409 Conflict; InvalidArgument,
PermissionDenied and AlreadyExists are their gRPC-only subclasses), so the canonical status word
is checked in the error body as well.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

# requirements.txt installs it (make setup): a missing client fails here, never skips
from google.api_core import exceptions
from google.api_core import retry as retries
from google.api_core.client_options import ClientOptions
from google.api_core.future import polling
from google.cloud import tpu_v2
from google.cloud.location import locations_pb2
from google.longrunning import operations_pb2
from google.oauth2.credentials import Credentials
from google.protobuf import empty_pb2, field_mask_pb2

from tools.tpu_emulator import catalog
from tools.tpu_emulator.testing import TOKEN, admin, node, serve

PROJECT = "demo-project"
NUMBER = "100000000001"
ZONE = "us-central2-b"
PARENT = f"projects/{PROJECT}/locations/{ZONE}"
# the operation delay of the emulator, and how often the client looks again (its default
# starts at one second)
DELAY = 0.05
POLL = polling.DEFAULT_POLLING.with_delay(initial=0.02, maximum=0.1, multiplier=1.5)

COVERED = {
    "cancel_operation",
    "create_node",
    "create_queued_resource",
    "delete_node",
    "delete_operation",
    "delete_queued_resource",
    "generate_service_identity",
    "get_accelerator_type",
    "get_guest_attributes",
    "get_location",
    "get_node",
    "get_operation",
    "get_queued_resource",
    "get_runtime_version",
    "list_accelerator_types",
    "list_locations",
    "list_nodes",
    "list_operations",
    "list_queued_resources",
    "list_runtime_versions",
    "reset_queued_resource",
    "start_node",
    "stop_node",
    "update_node",
}


def state() -> dict[str, Any]:
    return {
        "projects": {
            PROJECT: {
                "number": NUMBER,
                "zones": {
                    ZONE: {
                        "nodes": [
                            node("pod-a", "v4-32", labels={"team": "ml"}),
                            node("one", "v4-8"),
                            node("two", "v4-8"),
                        ]
                    },
                    "us-east1-d": {"accelerator_types": ["v5litepod-*"]},
                    "europe-west4-a": {},
                },
            }
        }
    }


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with serve(state(), operation_delay=DELAY) as srv:
        yield srv


@pytest.fixture
def client(server: Any) -> tpu_v2.TpuClient:
    admin(server.root_url, "POST", "reset")
    return tpu_v2.TpuClient(
        transport="rest",
        # the endpoint with its scheme: the REST transport keeps a given http://
        client_options=ClientOptions(api_endpoint=server.root_url),
        # a plain access token: the emulator wants a bearer token, and a token without expiry
        # is never refreshed
        credentials=Credentials(token=TOKEN),
    )


def status_word(exc: exceptions.GoogleAPICallError) -> str:
    return exc.response.json()["error"]["status"]


def test_every_public_rpc_of_the_client_is_covered() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(tpu_v2.TpuClient, inspect.isfunction)
        if not name.startswith("_")
        and "request" in inspect.signature(member).parameters
        and name != "get_mtls_endpoint_and_cert_source"
    }
    assert methods == COVERED, methods ^ COVERED


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


def test_the_emulators_accelerator_families_are_the_clients_enum() -> None:
    # The catalog names every family of the client's AcceleratorConfig.Type, with the numbers
    # the REST transport sends: a family a newer google-cloud-tpu adds (TPU7x, once the TPU API
    # offers it) fails here until the catalog, and through test_tpu_emulator_catalog.py the
    # collection's table, name it.
    enum = {t.name: t.value for t in tpu_v2.AcceleratorConfig.Type if t.value}
    assert {name: number for number, name in catalog.CONFIG_TYPE_NUMBERS.items()} == enum
    assert set(catalog.CONFIG_TYPES) == set(enum)


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
    assert client.get_location({"name": PARENT}).location_id == ZONE


def test_service_disabled_from_fault_injection(client: tpu_v2.TpuClient, server: Any) -> None:
    admin(
        server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": "SERVICE_DISABLED"}]}
    )
    with pytest.raises(exceptions.Forbidden) as disabled:
        list(client.list_accelerator_types(parent=PARENT))
    assert disabled.value.reason == "SERVICE_DISABLED"
    assert disabled.value.metadata["consumer"] == f"projects/{NUMBER}"


# -- queued resources ----------------------------------------------------------------------------


def queued(node_id: str, accelerator_type: str = "v4-8") -> tpu_v2.QueuedResource:
    spec = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=PARENT,
        node_id=node_id,
        node=tpu_v2.Node(accelerator_type=accelerator_type, runtime_version="tpu-ubuntu2204-base"),
    )
    return tpu_v2.QueuedResource(
        tpu=tpu_v2.QueuedResource.Tpu(node_spec=[spec]),
        spot=tpu_v2.QueuedResource.Spot(),
    )


def wait_for(client: tpu_v2.TpuClient, name: str, word: str) -> tpu_v2.QueuedResource:
    retry = POLL.with_timeout(10).with_predicate(retries.if_exception_type(AssertionError))

    def check() -> tpu_v2.QueuedResource:
        got = client.get_queued_resource(name=name)
        assert got.state.state == getattr(tpu_v2.QueuedResourceState.State, word), got.state
        return got

    return retry(check)()


def test_queued_resource_life_cycle(client: tpu_v2.TpuClient, server: Any) -> None:
    lro = client.create_queued_resource(
        parent=PARENT, queued_resource=queued("qr-node"), queued_resource_id="qr"
    )
    accepted = lro.result(timeout=10, polling=POLL)
    assert isinstance(accepted, tpu_v2.QueuedResource)
    assert accepted.name == f"{PARENT}/queuedResources/qr"
    assert accepted.tpu.node_spec[0].node_id == "qr-node"
    assert "spot" in accepted  # the tier is kept
    active = wait_for(client, accepted.name, "ACTIVE")
    assert active.state.state_initiator == tpu_v2.QueuedResourceState.StateInitiator.SERVICE
    made = client.get_node(name=f"{PARENT}/nodes/qr-node")
    assert made.state == tpu_v2.Node.State.READY
    assert made.queued_resource == accepted.name
    assert made.scheduling_config.spot

    listed = list(client.list_queued_resources(parent=PARENT))
    assert [q.name for q in listed] == [accepted.name]

    with pytest.raises(exceptions.Conflict):
        client.create_queued_resource(
            parent=PARENT, queued_resource=queued("other"), queued_resource_id="qr"
        )
    with pytest.raises(exceptions.BadRequest) as busy:
        client.reset_queued_resource(name=accepted.name)
    assert status_word(busy.value) == "FAILED_PRECONDITION"

    # the service suspends it (capacity taken back); reset puts it back in the queue
    admin(server.root_url, "POST", f"{PARENT}/queuedResources/qr:suspend")
    wait_for(client, accepted.name, "SUSPENDED")
    with pytest.raises(exceptions.NotFound):
        client.get_node(name=f"{PARENT}/nodes/qr-node")
    reset = client.reset_queued_resource(name=accepted.name)
    assert reset.metadata.verb == "reset"
    again = reset.result(timeout=10, polling=POLL)
    assert again.name == accepted.name
    wait_for(client, accepted.name, "ACTIVE")
    assert client.get_node(name=f"{PARENT}/nodes/qr-node").state == tpu_v2.Node.State.READY

    with pytest.raises(exceptions.BadRequest) as has_nodes:
        client.delete_queued_resource(name=accepted.name)
    assert status_word(has_nodes.value) == "FAILED_PRECONDITION"
    gone = client.delete_queued_resource(request={"name": accepted.name, "force": True})
    assert gone.result(timeout=10, polling=POLL) == empty_pb2.Empty()
    with pytest.raises(exceptions.NotFound):
        client.get_queued_resource(name=accepted.name)
    with pytest.raises(exceptions.NotFound):
        client.get_node(name=f"{PARENT}/nodes/qr-node")


def test_queued_resource_bad_input(client: tpu_v2.TpuClient) -> None:
    with pytest.raises(exceptions.BadRequest) as bad:
        client.create_queued_resource(
            parent=PARENT, queued_resource=queued("n", "v9-8"), queued_resource_id="qr"
        )
    assert status_word(bad.value) == "INVALID_ARGUMENT"
    with pytest.raises(exceptions.NotFound):
        client.reset_queued_resource(name=f"{PARENT}/queuedResources/ghost")


# -- catalog ---------------------------------------------------------------------------------------


def test_accelerator_types(client: tpu_v2.TpuClient) -> None:
    pager = client.list_accelerator_types(request={"parent": PARENT, "page_size": 10})
    first_page = next(iter(pager.pages))
    assert len(first_page.accelerator_types) == 10 and first_page.next_page_token
    types = [t.type_ for t in client.list_accelerator_types(parent=PARENT)]
    assert {"v4-8", "v4-32", "v5litepod-16", "v6e-256"} <= set(types)
    assert len(types) == len(set(types))
    lite = [
        t.type_
        for t in client.list_accelerator_types(parent=f"projects/{PROJECT}/locations/us-east1-d")
    ]
    assert lite and all(t.startswith("v5litepod-") for t in lite)

    got = client.get_accelerator_type(name=f"{PARENT}/acceleratorTypes/v4-32")
    assert isinstance(got, tpu_v2.AcceleratorType)
    assert (got.name, got.type_) == (f"{PARENT}/acceleratorTypes/v4-32", "v4-32")
    with pytest.raises(exceptions.NotFound):
        client.get_accelerator_type(name=f"{PARENT}/acceleratorTypes/v4-9")
    with pytest.raises(exceptions.NotFound):  # offered by the service, not in that zone
        client.get_accelerator_type(
            name=f"projects/{PROJECT}/locations/us-east1-d/acceleratorTypes/v4-8"
        )


def test_runtime_versions(client: tpu_v2.TpuClient) -> None:
    versions = [v.version for v in client.list_runtime_versions(parent=PARENT)]
    for expected in (
        "tpu-ubuntu2204-base",
        "v2-alpha-tpuv5-lite",
        "v2-alpha-tpuv5",
        "v2-alpha-tpuv6e",
    ):
        assert expected in versions
    assert len(versions) == len(set(versions))
    pages = list(client.list_runtime_versions(request={"parent": PARENT, "page_size": 2}).pages)
    assert len(pages) > 1 and [v.version for p in pages for v in p.runtime_versions] == versions
    lite_zone = f"projects/{PROJECT}/locations/us-east1-d"
    lite = [v.version for v in client.list_runtime_versions(parent=lite_zone)]
    assert "v2-alpha-tpuv5-lite" in lite and "tpu-ubuntu2204-base" not in lite

    got = client.get_runtime_version(name=f"{PARENT}/runtimeVersions/v2-alpha-tpuv6e")
    assert isinstance(got, tpu_v2.RuntimeVersion)
    assert got.name == f"{PARENT}/runtimeVersions/v2-alpha-tpuv6e"
    assert got.version == "v2-alpha-tpuv6e"
    with pytest.raises(exceptions.NotFound):
        client.get_runtime_version(name=f"{PARENT}/runtimeVersions/windows-95")
    with pytest.raises(exceptions.NotFound):
        client.get_runtime_version(name=f"{lite_zone}/runtimeVersions/tpu-ubuntu2204-base")


# -- service identity, guest attributes ---------------------------------------------------------


def test_generate_service_identity(client: tpu_v2.TpuClient) -> None:
    got = client.generate_service_identity(request={"parent": PARENT})
    assert isinstance(got, tpu_v2.GenerateServiceIdentityResponse)
    assert got.identity.email == f"service-{NUMBER}@cloud-tpu.iam.gserviceaccount.com"
    with pytest.raises(exceptions.NotFound):
        client.generate_service_identity(
            request={"parent": f"projects/{PROJECT}/locations/mars-1a"}
        )


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


# -- locations and operations (the mixins) ------------------------------------------------------


def test_locations(client: tpu_v2.TpuClient) -> None:
    listed = client.list_locations(locations_pb2.ListLocationsRequest(name=f"projects/{PROJECT}"))
    assert [loc.location_id for loc in listed.locations] == sorted(
        ["us-central2-b", "us-east1-d", "europe-west4-a"]
    )
    paged = client.list_locations({"name": f"projects/{PROJECT}", "page_size": 2})
    assert len(paged.locations) == 2 and paged.next_page_token
    got = client.get_location({"name": PARENT})
    assert (got.name, got.location_id) == (PARENT, ZONE)
    with pytest.raises(exceptions.NotFound):
        client.get_location({"name": f"projects/{PROJECT}/locations/mars-1a"})
    with pytest.raises(exceptions.Forbidden):  # an unknown project reads as no permission
        client.list_locations({"name": "projects/somebody-else"})


def test_operations(client: tpu_v2.TpuClient, server: Any) -> None:
    # long enough for the cancel to find the operation running (reset restores the delay)
    server.emulator.settings["operation_delay"] = 0.5
    lro = client.stop_node(request={"name": f"{PARENT}/nodes/one"})
    op_name = lro.operation.name
    assert op_name.startswith(f"{PARENT}/operations/")

    # cancel is best effort, as the API allows: recorded, and the stop still happens
    assert client.cancel_operation({"name": op_name}) is None
    running = client.get_operation({"name": op_name})
    meta = tpu_v2.OperationMetadata.deserialize(running.metadata.value)
    assert meta.cancel_requested and meta.verb == "stop"
    assert lro.result(timeout=10, polling=POLL).state == tpu_v2.Node.State.STOPPED

    done = client.get_operation(operations_pb2.GetOperationRequest(name=op_name))
    assert done.done and done.response.type_url.endswith("google.cloud.tpu.v2.Node")
    listed = client.list_operations({"name": PARENT})
    assert op_name in [op.name for op in listed.operations]

    assert client.delete_operation({"name": op_name}) is None
    with pytest.raises(exceptions.NotFound):
        client.get_operation({"name": op_name})
    with pytest.raises(exceptions.NotFound):
        client.delete_operation({"name": op_name})
    with pytest.raises(exceptions.NotFound):
        client.cancel_operation({"name": op_name})
