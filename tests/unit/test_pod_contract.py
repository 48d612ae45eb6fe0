"""The pod contract (module_utils/tpu_pod.py): members, coordinator and addresses, decoded once."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import pod_of, pod_vars

STATIC: dict[str, dict[str, Any]] = {
    # Deliberately out of order, mixed address sources, and a second pod.
    "a-1": {"tpu_node": "a", "tpu_worker_id": 1, "tpu_internal_ip": "10.0.0.3"},
    "a-0": {"tpu_node": "a", "tpu_worker_id": "0", "ansible_host": "10.0.0.2"},
    "a-2": {"tpu_node": "a", "tpu_worker_id": 2},
    "b-0": {"tpu_node": "b", "tpu_worker_id": 0, "tpu_internal_ip": "10.1.0.2"},
}


def test_pod_vars_takes_worker_zero_as_coordinator() -> None:
    assert pod_vars([("p-w0", "10.0.0.2"), ("p-w1", "10.0.0.3")]) == {
        "tpu_pod_coordinator": "p-w0",
        "tpu_pod_coordinator_ip": "10.0.0.2",
        "tpu_pod_hosts": ["p-w0", "p-w1"],
        "tpu_pod_ips": ["10.0.0.2", "10.0.0.3"],
    }
    assert pod_vars([]) == {}


def test_static_inventory_pod_is_grouped_by_node_and_ordered_by_worker_id() -> None:
    pod = pod_of("a-2", STATIC, list(STATIC))
    assert pod == {
        "node": "a",
        "worker_id": 2,
        "coordinator": "a-0",
        "coordinator_ip": "10.0.0.2",
        "hosts": ["a-0", "a-1", "a-2"],
        "ips": ["10.0.0.2", "10.0.0.3", "a-2"],
        # One node without slice variables: slice 0 of 1, coordinating its own job.
        "slice_id": 0,
        "num_slices": 1,
        "queued_resource": "",
        "job_coordinator": "a-0",
        "job_coordinator_ip": "10.0.0.2",
    }
    assert pod_of("b-0", STATIC, list(STATIC))["hosts"] == ["b-0"]


def test_published_variables_win_over_recomputation() -> None:
    # What the inventory published is the answer, even where hostvars would say otherwise.
    hostvars = dict(STATIC)
    hostvars["a-1"] = dict(
        STATIC["a-1"],
        **pod_vars([("a-0", "192.168.0.2"), ("a-1", "192.168.0.3")]),
    )
    pod = pod_of("a-1", hostvars, list(hostvars))
    assert (pod["coordinator_ip"], pod["hosts"], pod["worker_id"]) == (
        "192.168.0.2",
        ["a-0", "a-1"],
        1,
    )


def test_hosts_without_a_node_form_one_pod() -> None:
    hostvars: dict[str, dict[str, Any]] = {"x": {}, "y": {"ansible_host": "10.9.0.1"}}
    pod = pod_of("y", hostvars, ["y", "x"])
    assert pod["hosts"] == ["x", "y"] and pod["coordinator"] == "x"


def test_a_static_hosts_gathered_address_comes_before_ansible_host() -> None:
    # With the docker connection ansible_host is a container name; on GCE it is often the
    # external address. The pod talks over the internal one the host reports.
    hostvars: dict[str, dict[str, Any]] = {
        "c0": {"tpu_node": "n", "ansible_host": "c0-container", "default_ipv4": "172.20.0.2"},
        "c1": {"tpu_node": "n", "ansible_host": "c1-container"},
    }
    pod = pod_of("c1", hostvars, ["c0", "c1"])
    assert pod["ips"] == ["172.20.0.2", "c1-container"]
