"""Node JSON -> hosts, groups and variables: the pure functions behind the tpu_vm inventory plugin
(module_utils/tpu_inventory_hosts.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import (
    tpu_inventory_hosts as inventory_hosts,
)

HOSTVAR_KEYS = {
    "tpu_project",
    "tpu_zone",
    "tpu_node",
    "tpu_worker_id",
    "tpu_worker_count",
    "tpu_accelerator_type",
    "tpu_generation",
    "tpu_chips_per_host",
    "tpu_device_glob",
    "tpu_internal_ip",
    "tpu_external_ip",
    "tpu_state",
    "tpu_health",
    "tpu_runtime_version",
    "tpu_labels",
    "tpu_spot",
    "ansible_host",
    "tpu_pod_coordinator",
    "tpu_pod_coordinator_ip",
    "tpu_pod_hosts",
    "tpu_pod_ips",
    "tpu_queued_resource",
    "tpu_slice_id",
    "tpu_num_slices",
    "tpu_pod_job_coordinator",
    "tpu_pod_job_coordinator_ip",
}


def endpoint(internal: str, external: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"ipAddress": internal, "port": 8470}
    if external:
        entry["accessConfig"] = {"externalIp": external}
    return entry


def api_node(
    name: str = "pod-a",
    zone: str = "us-central2-b",
    accel: str = "v4-32",
    state: str = "READY",
    endpoints: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    node = {
        "name": f"projects/proj-1/locations/{zone}/nodes/{name}",
        "acceleratorType": accel,
        "state": state,
        "health": "HEALTHY",
        "runtimeVersion": "tpu-ubuntu2204-base",
        "networkEndpoints": endpoints
        if endpoints is not None
        else [endpoint(f"10.0.0.{i + 2}", f"34.1.1.{i + 2}") for i in range(4)],
    }
    node.update(extra)
    return node


def test_multi_host_node_gives_one_host_per_endpoint_with_every_variable() -> None:
    node = api_node(labels={"team": "vision"}, schedulingConfig={"spot": True})
    hosts = inventory_hosts.node_hosts(node, "proj-1")
    assert [name for name, _, _ in hosts] == ["pod-a-w0", "pod-a-w1", "pod-a-w2", "pod-a-w3"]
    _name, hostvars, groups = hosts[2]
    assert set(hostvars) == HOSTVAR_KEYS
    assert hostvars == {
        "tpu_project": "proj-1",
        "tpu_zone": "us-central2-b",
        "tpu_node": "pod-a",
        "tpu_worker_id": 2,
        "tpu_worker_count": 4,
        "tpu_accelerator_type": "v4-32",
        "tpu_generation": "v4",
        "tpu_chips_per_host": 4,
        "tpu_device_glob": "/dev/accel*",
        "tpu_internal_ip": "10.0.0.4",
        "tpu_external_ip": "34.1.1.4",
        "tpu_state": "READY",
        "tpu_health": "HEALTHY",
        "tpu_runtime_version": "tpu-ubuntu2204-base",
        "tpu_labels": {"team": "vision"},
        "tpu_spot": True,
        "ansible_host": "34.1.1.4",
        # The pod contract: worker 0 coordinates, internal addresses in worker order.
        "tpu_pod_coordinator": "pod-a-w0",
        "tpu_pod_coordinator_ip": "10.0.0.2",
        "tpu_pod_hosts": ["pod-a-w0", "pod-a-w1", "pod-a-w2", "pod-a-w3"],
        "tpu_pod_ips": ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"],
        # Not made by a queued resource: slice 0 of 1, its own job's coordinator.
        "tpu_queued_resource": "",
        "tpu_slice_id": 0,
        "tpu_num_slices": 1,
        "tpu_pod_job_coordinator": "pod-a-w0",
        "tpu_pod_job_coordinator_ip": "10.0.0.2",
    }
    assert groups == [
        "tpu",
        "tpu_node_pod_a",
        "tpu_type_v4_32",
        "tpu_zone_us_central2_b",
        "tpu_gen_v4",
    ]
    assert "tpu_coordinator" in hosts[0][2]
    assert all("tpu_coordinator" not in h[2] for h in hosts[1:])


def test_internal_only_worker_uses_internal_ip_and_has_no_external() -> None:
    node = api_node(accel="v6e-8", endpoints=[endpoint("10.9.0.2")])
    [(name, hostvars, groups)] = inventory_hosts.node_hosts(node, "proj-1")
    assert name == "pod-a-w0"
    assert hostvars["tpu_external_ip"] is None
    assert hostvars["ansible_host"] == "10.9.0.2"
    assert hostvars["tpu_generation"] == "v6e"
    assert hostvars["tpu_chips_per_host"] == 8
    assert hostvars["tpu_device_glob"] == "/dev/vfio/[0-9]*"
    assert "tpu_gen_v6e" in groups
    assert "tpu_coordinator" in groups


def test_use_internal_ip_ignores_the_external_address() -> None:
    hosts = inventory_hosts.node_hosts(api_node(), "proj-1", use_internal_ip=True)
    assert [h[1]["ansible_host"] for h in hosts] == [f"10.0.0.{i}" for i in range(2, 6)]
    assert hosts[0][1]["tpu_external_ip"] == "34.1.1.2"


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        # preemptible (the older field) counts as spot
        (api_node(schedulingConfig={"preemptible": True}), True),
        (api_node(schedulingConfig={"reserved": True}), False),
        (api_node(), False),
    ],
)
def test_spot(node: dict[str, Any], expected: bool) -> None:
    assert inventory_hosts.node_hosts(node, "p")[0][1]["tpu_spot"] is expected


@pytest.mark.parametrize(
    "node",
    [
        {},
        {"name": "garbage"},
        {"name": "projects/p/locations/z/nodes/n", "networkEndpoints": "nope"},
        {"name": "projects/p/locations/z/nodes/n", "networkEndpoints": [None, 7]},
        {"name": "projects/p/locations/z/nodes/n", "state": "CREATING"},
    ],
)
def test_nodes_without_usable_endpoints_give_no_hosts(node: dict[str, Any]) -> None:
    assert inventory_hosts.node_hosts(node, "p") == []


def test_unknown_type_and_missing_fields_do_not_crash() -> None:
    node = {
        "name": "projects/p/locations/z-1/nodes/odd",
        "acceleratorType": "v9-12",
        "networkEndpoints": [{"ipAddress": "10.1.1.1", "accessConfig": "weird"}, {}],
    }
    hosts = inventory_hosts.node_hosts(node, "p")
    assert len(hosts) == 2
    first = hosts[0][1]
    assert first["tpu_generation"] == "unknown"
    assert first["tpu_chips_per_host"] is None
    assert first["tpu_device_glob"] == ""
    assert first["tpu_state"] == "STATE_UNSPECIFIED"
    assert first["tpu_health"] == "HEALTH_UNSPECIFIED"
    assert first["tpu_external_ip"] is None
    assert "tpu_gen_unknown" in hosts[0][2]
    assert "tpu_type_v9_12" in hosts[0][2]
    # the second endpoint has no address: no ansible_host at all rather than an empty one
    assert "ansible_host" not in hosts[1][1]


def test_accelerator_config_only_node() -> None:
    node = api_node(accel="")
    node["acceleratorConfig"] = {"type": "V5LITE_POD", "topology": "4x4"}
    hostvars = inventory_hosts.node_hosts(node, "p")[0][1]
    assert hostvars["tpu_accelerator_type"] == "v5litepod-16"
    assert hostvars["tpu_generation"] == "v5e"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{node}-w{worker_id}", "pod-a-w1"),
        ("{project}.{zone}.{node}.{worker_id}", "proj-1.us-central2-b.pod-a.1"),
        ("{generation}-{accelerator_type}-{worker_id}", "v4-v4-32-1"),
    ],
)
def test_hostname_template(template: str, expected: str) -> None:
    assert inventory_hosts.node_hosts(api_node(), "proj-1", hostname=template)[1][0] == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{node}-{worker}", "uses {worker}"),
        ("{node}", "must contain {worker_id}"),
        ("static", "must contain {worker_id}"),
        ("{node-w{worker_id}", "not a valid format string"),
        ("{node.__class__}-{worker_id}", "uses {node.__class__}"),
    ],
)
def test_bad_hostname_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        inventory_hosts.check_hostname_template(template)


@pytest.mark.parametrize(
    ("filters", "kept"),
    [
        ({}, ["a", "c"]),  # default: READY only
        ({"states": []}, ["a", "b", "c", "d"]),
        ({"states": ["preempted"]}, ["b"]),
        ({"states": ["READY", "PREEMPTED"]}, ["a", "b", "c"]),
        ({"states": [], "labels": {"team": "vision"}}, ["a", "b"]),
        ({"states": [], "labels": {"team": "v*"}}, ["a", "b"]),
        ({"states": [], "labels": {"team": "*"}}, ["a", "b", "c"]),
        ({"states": [], "labels": {"team": "vision", "env": "prod"}}, ["a"]),
        ({"states": [], "accelerator_types": ["v5litepod-*"]}, ["c"]),
        ({"states": [], "accelerator_types": ["v4-*", "v6e-8"]}, ["a", "b", "d"]),
        ({"states": [], "names": ["[ab]"]}, ["a", "b"]),
        ({"names": ["nothing*"]}, []),
    ],
)
def test_node_filters(filters: dict[str, Any], kept: list[str]) -> None:
    nodes = [
        api_node("a", labels={"team": "vision", "env": "prod"}),
        api_node("b", state="PREEMPTED", labels={"team": "vision"}),
        api_node("c", accel="v5litepod-16", labels={"team": "speech"}),
        api_node("d", accel="v6e-8", state="CREATING"),
    ]
    args = {"states": ("READY",), **filters}
    assert [n["name"][-1] for n in nodes if inventory_hosts.node_matches(n, **args)] == kept


def fetched(*projects: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"projects": {name: {"nodes": nodes, "warnings": []} for name, nodes in projects}}


def test_build_hosts_orders_by_project_then_node_and_filters() -> None:
    data = fetched(
        ("proj-2", [api_node("z"), api_node("y", state="STOPPED")]),
        ("proj-1", [api_node("b", endpoints=[endpoint("10.0.0.9")]), api_node("a")]),
    )
    hosts, warnings = inventory_hosts.build_hosts(data)
    assert [h[0] for h in hosts] == [
        "a-w0",
        "a-w1",
        "a-w2",
        "a-w3",
        "b-w0",
        "z-w0",
        "z-w1",
        "z-w2",
        "z-w3",
    ]
    assert {h[1]["tpu_project"] for h in hosts if h[0].startswith("z")} == {"proj-2"}
    assert warnings == []


def test_same_node_name_in_two_projects_is_an_error_with_the_default_hostname() -> None:
    data = fetched(("proj-1", [api_node("pod")]), ("proj-2", [api_node("pod")]))
    with pytest.raises(ValueError, match=r"host name 'pod-w0' is used by proj-1/.* and proj-2/"):
        inventory_hosts.build_hosts(data)


def test_same_node_name_with_distinct_hostnames_warns_about_the_shared_group() -> None:
    data = fetched(("proj-1", [api_node("pod")]), ("proj-2", [api_node("pod")]))
    hosts, warnings = inventory_hosts.build_hosts(data, hostname="{project}-{node}-w{worker_id}")
    assert len(hosts) == 8
    assert len(warnings) == 1
    assert "tpu_node_pod holds the workers of both" in warnings[0]


def test_build_hosts_does_not_modify_its_input() -> None:
    data = fetched(("proj-1", [api_node("a", labels={"k": "v"})]))
    before = copy.deepcopy(data)
    hosts, _warnings = inventory_hosts.build_hosts(data)
    hosts[0][1]["tpu_labels"]["k"] = "changed"
    assert data == before


@pytest.mark.parametrize(
    ("prefix", "value", "expected"),
    [
        ("tpu_type_", "v5litepod-16", "tpu_type_v5litepod_16"),
        ("tpu_zone_", "us-central2-b", "tpu_zone_us_central2_b"),
        ("tpu_node_", "my.pod/x y", "tpu_node_my_pod_x_y"),
        ("tpu_node_", "ünïcode", "tpu_node__n_code"),
    ],
)
def test_group_names_are_sanitized(prefix: str, value: str, expected: str) -> None:
    assert inventory_hosts.group_name(prefix, value) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("projects/p/locations/z/nodes/n", ("p", "z", "n")),
        ("n", ("", "", "n")),
        ("projects/p/locations/z/queuedResources/n", ("", "", "n")),
        (None, ("", "", "")),
    ],
)
def test_parse_node_name(name: str | None, expected: tuple[str, str, str]) -> None:
    assert inventory_hosts.parse_node_name(name) == expected


def test_wrap_is_applied_to_every_value_from_the_api() -> None:
    node = api_node(labels={"team": "vision"})
    hosts = inventory_hosts.node_hosts(node, "proj-1", wrap=lambda v: ("wrapped", v))
    hostvars = hosts[1][1]
    assert hostvars["tpu_node"] == ("wrapped", "pod-a")
    assert hostvars["tpu_labels"] == ("wrapped", {"team": "vision"})
    assert hostvars["tpu_internal_ip"] == ("wrapped", "10.0.0.3")
    assert hostvars["ansible_host"] == ("wrapped", "34.1.1.3")
    assert hostvars["tpu_worker_id"] == 1
    # the host name is built from the plain values
    assert hosts[1][0] == "pod-a-w1"


def test_slim_node_keeps_what_the_inventory_uses() -> None:
    node = api_node(labels={"a": "b"}, schedulingConfig={"spot": True})
    node["metadata"] = {"ssh-keys": "big"}
    node["serviceAccount"] = {"email": "x"}
    node["networkEndpoints"][0]["port"] = 8470
    node["networkEndpoints"].append("junk")
    slim = inventory_hosts.slim_node(node)
    assert "metadata" not in slim
    assert "serviceAccount" not in slim
    assert slim["networkEndpoints"][0] == {
        "ipAddress": "10.0.0.2",
        "accessConfig": {"externalIp": "34.1.1.2"},
    }
    assert len(slim["networkEndpoints"]) == 4
    assert inventory_hosts.node_hosts(slim, "proj-1") == inventory_hosts.node_hosts(node, "proj-1")
