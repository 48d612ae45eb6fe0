"""Emulator behaviour the lifecycle modules rely on: node PATCH, multislice queued resources,
maintenance events; and the Docker backend's readiness probe and FUSE device (no Docker needed
here)."""

from __future__ import annotations

import importlib
import json
import re
import socket
import threading
import time
from typing import Any

import pytest

from tests.module_harness import PROJECT, TOKEN, ZONE, Api, state
from tools.tpu_emulator import Emulator, EmulatorServer, docker_backend, docker_cli, docker_worker
from tools.tpu_emulator.backends import InMemoryBackend, NodeInfo
from tools.tpu_emulator.docker_backend import DockerBackend
from tools.tpu_emulator.docker_worker import ssh_banner, tpu_vm_hostname

tpu_api = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api")
PARENT = f"projects/{PROJECT}/locations/{ZONE}"


def make_node(client: Any, name: str = "pod-a", accel: str = "v4-16") -> dict[str, Any]:
    body = {
        "acceleratorType": accel,
        "runtimeVersion": "tpu-ubuntu2204-base",
        "networkConfig": {"enableExternalIps": True},
        "labels": {"team": "vision"},
    }
    client.wait_operation(client.create_node(PROJECT, ZONE, name, body), poll=0.02)
    return client.get_node(PROJECT, ZONE, name)


def test_patch_changes_only_the_masked_fields(client: Any) -> None:
    make_node(client)
    operation = client.update_node(
        PROJECT, ZONE, "pod-a", {"labels": {"team": "audio"}, "description": "x"}, ["labels"]
    )
    done = client.wait_operation(operation, poll=0.02)
    assert done["metadata"]["verb"] == "update"
    node = client.get_node(PROJECT, ZONE, "pod-a")
    assert node["labels"] == {"team": "audio"}
    assert "description" not in node


def test_patched_metadata_reaches_the_backend() -> None:
    seen: list[dict[str, str]] = []

    class Recording(InMemoryBackend):
        def update_metadata(self, node: NodeInfo) -> None:
            seen.append(dict(node.metadata))

    server = EmulatorServer(Emulator(state(), backend=Recording(), operation_delay=0.0)).start()
    try:
        client = tpu_api.TpuClient.from_params(
            {"auth_kind": "accesstoken", "access_token": TOKEN}, base_url=server.api_url
        )
        make_node(client)
        keys = {"ssh-keys": "ana:ssh-ed25519 AAAA ana"}
        operation = client.update_node(PROJECT, ZONE, "pod-a", {"metadata": keys}, ["metadata"])
        client.wait_operation(operation, poll=0.02)
        labels = client.update_node(PROJECT, ZONE, "pod-a", {"labels": {}}, ["labels"])
        client.wait_operation(labels, poll=0.02)
    finally:
        server.stop()
    assert seen == [keys]


def test_patch_refuses_fields_the_api_cannot_change(client: Any) -> None:
    make_node(client)
    with pytest.raises(tpu_api.TpuApiError) as caught:
        client.update_node(PROJECT, ZONE, "pod-a", {"runtimeVersion": "x"}, ["runtimeVersion"])
    assert caught.value.status == 400
    assert "runtimeVersion cannot be updated" in caught.value.api_message


def test_patch_without_a_mask_is_refused(client: Any) -> None:
    make_node(client)
    with pytest.raises(tpu_api.TpuApiError) as caught:
        client.update_node(PROJECT, ZONE, "pod-a", {"labels": {}}, [])
    assert "update_mask" in caught.value.api_message


def queued(client: Any, spec: dict[str, Any], qr_id: str = "qr") -> None:
    node = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}
    body = {"tpu": {"nodeSpec": [dict(spec, parent=PARENT, node=node)]}}
    client.wait_operation(client.create_queued_resource(PROJECT, ZONE, qr_id, body), poll=0.02)


def wait_active(client: Any, qr_id: str = "qr") -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        qr = client.get_queued_resource(PROJECT, ZONE, qr_id)
        if qr["state"]["state"] == "ACTIVE":
            return qr
        time.sleep(0.02)
    raise AssertionError(f"{qr_id} is {qr['state']}")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"nodeCount": 2, "nodeIdPrefix": "ms"}, ["ms-0", "ms-1"]),
        ({"nodeCount": 3}, ["qr-0", "qr-1", "qr-2"]),
    ],
)
def test_multislice_params_create_prefixed_nodes(
    client: Any, params: dict[str, Any], expected: list[str]
) -> None:
    queued(client, {"multisliceParams": params})
    qr = wait_active(client)
    assert qr["tpu"]["nodeSpec"][0]["multisliceParams"] == params
    nodes, _ = client.list_nodes(PROJECT, ZONE)
    assert sorted(n["name"].rsplit("/", 1)[-1] for n in nodes) == expected
    assert all(n["queuedResource"].endswith("/queuedResources/qr") for n in nodes)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"multisliceParams": {"nodeCount": 1}}, "greater than 1"),
        ({"nodeId": "x", "multisliceParams": {"nodeCount": 2}}, "mutually exclusive"),
    ],
)
def test_bad_multislice_requests_are_refused(
    client: Any, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(tpu_api.TpuApiError) as caught:
        queued(client, spec)
    assert caught.value.status == 400
    assert message in caught.value.api_message


def test_maintenance_reports_unhealthy_then_reads_addresses_again(api: Api, client: Any) -> None:
    before = make_node(client)
    node = api.admin("POST", f"{PARENT}/nodes/pod-a:maintenance")
    assert node["health"] == "UNHEALTHY_MAINTENANCE"
    deadline = time.monotonic() + 10
    while client.get_node(PROJECT, ZONE, "pod-a").get("health") != "HEALTHY":
        assert time.monotonic() < deadline, "maintenance never ended"
        time.sleep(0.02)
    after = client.get_node(PROJECT, ZONE, "pod-a")
    old = [e["accessConfig"]["externalIp"] for e in before["networkEndpoints"]]
    new = [e["accessConfig"]["externalIp"] for e in after["networkEndpoints"]]
    # The in-memory backend keeps internal addresses and hands out new external ones, as a
    # maintenance event may do on the real service.
    assert [e["ipAddress"] for e in after["networkEndpoints"]] == [
        e["ipAddress"] for e in before["networkEndpoints"]
    ]
    assert set(old).isdisjoint(new), (old, new)


def test_maintenance_needs_a_ready_node(api: Api, client: Any) -> None:
    make_node(client)
    api.admin("POST", f"{PARENT}/nodes/pod-a:preempt")
    with pytest.raises(OSError, match="400"):
        api.admin("POST", f"{PARENT}/nodes/pod-a:maintenance")


def test_worker_host_names_look_like_tpu_vms() -> None:
    info = NodeInfo(PROJECT, ZONE, "pod-a", "v4-16", 2, True)
    names = [tpu_vm_hostname(info, i) for i in range(2)]
    assert all(re.fullmatch(r"t1v-n-[0-9a-f]{8}-w-[01]", n) for n in names), names
    assert names[0][:-1] == names[1][:-1]
    other = NodeInfo(PROJECT, ZONE, "pod-b", "v4-16", 2, True)
    assert tpu_vm_hostname(other, 0) != names[0]


def serve_once(greeting: bytes) -> int:
    """A TCP server on a free port that sends ``greeting`` to one client."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(greeting)
        listener.close()

    threading.Thread(target=answer, daemon=True).start()
    return listener.getsockname()[1]


def test_ssh_banner_is_read_from_an_ssh_server() -> None:
    port = serve_once(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
    assert ssh_banner("127.0.0.1", port) == "SSH-2.0-OpenSSH_9.2p1 Debian-2"


def test_something_else_on_the_port_is_not_ready() -> None:
    port = serve_once(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    assert ssh_banner("127.0.0.1", port) == ""


def test_a_closed_port_is_not_ready() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    assert ssh_banner("127.0.0.1", port, timeout=0.5) == ""


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"startup-script": "#!/bin/sh\necho hi"}, "#!/bin/sh\necho hi\n"),
        ({"startup-script": "echo hi\n"}, "echo hi\n"),
        ({"startup-script": "  \n"}, ""),
        ({}, ""),
    ],
)
def test_the_startup_script_file_is_root_only_and_empty_without_one(tmp_path, metadata, expected):
    """The Docker backend copies this file into every worker; the image runs it when not empty."""
    node = NodeInfo("p", "z", "n", "v4-8", 1, False, metadata=metadata)
    path = docker_worker.startup_script_file(node, str(tmp_path))
    assert path.read_text() == expected
    assert path.stat().st_mode & 0o777 == 0o700
    assert tpu_vm_hostname(node, 3).endswith("-w-3")  # what the pull script reads its number from


def test_workers_get_the_fuse_device_only_when_the_host_has_one(tmp_path, monkeypatch) -> None:
    """A bucket mount needs /dev/fuse in the worker: given when the host has it, never faked."""
    device = tmp_path / "fuse"
    assert docker_worker.fuse_run_args(str(device)) == []
    device.touch()
    assert docker_worker.fuse_run_args(str(device)) == [
        "--device", str(device), "--security-opt", "apparmor=unconfined",
    ]  # fmt: skip
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(docker_cli, "call", lambda *args, **_: calls.append(args) or "")
    monkeypatch.setattr(docker_worker, "fuse_run_args", lambda: ["--device", "/dev/fuse"])
    backend = object.__new__(DockerBackend)
    backend.image, backend.emulator_id, backend._nodes = "img", "t", {}
    backend._lock = threading.Lock()
    backend._metadata, backend._listeners, backend._seen = None, {}, {}
    monkeypatch.setattr(backend, "_addresses", lambda node, containers: [])
    backend.create(NodeInfo("p", "z", "n", "v4-8", 1, False))
    (create,) = [call for call in calls if call[0] == "create"]
    assert create[-4:] == ("--device", "/dev/fuse", "img", "/lib/systemd/systemd"), create
    assert "SYS_ADMIN" in create


def _docker_backend_without_docker(monkeypatch, gateway: str) -> tuple[DockerBackend, list]:
    """A DockerBackend whose docker commands are recorded; the node network's gateway is
    ``gateway`` and worker w0's address 127.0.0.1."""
    calls: list[tuple[str, ...]] = []

    def docker(*args: str, **_: Any) -> str:
        calls.append(args)
        if args[:2] == ("network", "inspect"):
            return json.dumps([{"Subnet": "127.0.0.0/8", "Gateway": gateway}])
        if args[0] == "inspect":
            return "127.0.0.1 "
        return ""

    monkeypatch.setattr(docker_cli, "call", docker)
    backend = object.__new__(DockerBackend)
    backend.image, backend.emulator_id, backend._nodes = "img", "t", {}
    backend._lock = threading.Lock()
    backend._metadata, backend._listeners, backend._seen = None, {}, {}
    backend.metadata_problem = ""
    monkeypatch.setattr(backend, "_addresses", lambda node, containers: [])
    return backend, calls


def test_workers_resolve_the_metadata_server_to_their_networks_gateway(monkeypatch) -> None:
    """Every worker gets metadata.google.internal pointing at the gateway of its node's network,
    where the node's metadata server listens; it answers the worker at that address."""
    monkeypatch.setattr(docker_backend, "METADATA_PORT", 0)  # port 80 wants root
    backend, calls = _docker_backend_without_docker(monkeypatch, "127.0.0.1")
    emulator = Emulator({}, backend=backend)
    info = NodeInfo("p", "z", "n", "v4-8", 1, False)
    backend.create(info)
    try:
        (create,) = [call for call in calls if call[0] == "create"]
        hosts = [create[i + 1] for i, arg in enumerate(create) if arg == "--add-host"]
        assert hosts == ["host.docker.internal:host-gateway", "metadata.google.internal:127.0.0.1"]
        server = backend._listeners[info.key]
        assert server.address[0] == "127.0.0.1" and backend.describe()["metadata_servers"] == 1
        assert emulator.metadata is backend._metadata
        ref = backend._worker_at(info, "127.0.0.1")  # learnt from docker inspect of w0
        assert (ref.node_id, ref.worker, ref.hostname) == ("n", 0, tpu_vm_hostname(info, 0))
        assert backend._worker_at(info, "10.9.9.9") is None
    finally:
        backend.delete(info)
    assert backend._listeners == {}  # deleting the node stops its metadata server


def test_without_the_port_the_workers_get_no_metadata_server_and_it_is_said(monkeypatch) -> None:
    backend, calls = _docker_backend_without_docker(monkeypatch, "127.0.0.1")
    Emulator({}, backend=backend)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(docker_backend, "MetadataServer", refused)
    backend.create(NodeInfo("p", "z", "n", "v4-8", 1, False))
    (create,) = [call for call in calls if call[0] == "create"]
    assert "metadata.google.internal:127.0.0.1" not in create
    assert "cannot listen on 127.0.0.1:80 (Permission denied)" in backend.metadata_problem
    assert backend.describe()["metadata_problem"] == backend.metadata_problem
