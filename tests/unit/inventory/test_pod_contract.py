"""The pod contract (module_utils/tpu_pod.py): members, coordinator and addresses, decoded once."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import (
    host_port,
    pod_of,
    pod_vars,
)

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
        "jax_coordinator_address": "10.0.0.2:8476",
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


# -- multislice: hosts that set their slice by hand, or what the inventory published ----------

SLICES: dict[str, dict[str, Any]] = {
    "s1-w1": {"tpu_node": "s1", "tpu_worker_id": 1, "tpu_slice_id": "1", "tpu_num_slices": "2"},
    "s1-w0": {"tpu_node": "s1", "tpu_worker_id": 0, "tpu_slice_id": 1, "tpu_num_slices": 2},
    "s0-w1": {"tpu_node": "s0", "tpu_worker_id": 1, "tpu_slice_id": 0, "tpu_num_slices": 2},
    "s0-w0": {
        "tpu_node": "s0",
        "tpu_worker_id": 0,
        "tpu_slice_id": 0,
        "tpu_num_slices": 2,
        "tpu_internal_ip": "10.0.0.2",
    },
}


def test_a_static_multislice_job_has_one_coordinator_and_per_slice_pods() -> None:
    pod = pod_of("s1-w1", SLICES, list(SLICES))
    assert (pod["coordinator"], pod["hosts"], pod["worker_id"]) == ("s1-w0", ["s1-w0", "s1-w1"], 1)
    assert {
        k: pod[k] for k in ("slice_id", "num_slices", "job_coordinator", "job_coordinator_ip")
    } == {
        "slice_id": 1,
        "num_slices": 2,
        "job_coordinator": "s0-w0",
        "job_coordinator_ip": "10.0.0.2",
    }
    assert pod_of("s0-w1", SLICES, list(SLICES))["job_coordinator"] == "s0-w0"


def test_two_static_jobs_are_told_apart_by_their_queued_resource() -> None:
    hostvars = {
        **{n: dict(v, tpu_queued_resource="a") for n, v in SLICES.items()},
        "b0": {
            "tpu_node": "b0",
            "tpu_slice_id": 0,
            "tpu_num_slices": 2,
            "tpu_queued_resource": "b",
        },
        "b1": {
            "tpu_node": "b1",
            "tpu_slice_id": 1,
            "tpu_num_slices": 2,
            "tpu_queued_resource": "b",
        },
    }
    assert pod_of("b1", hostvars, list(hostvars))["job_coordinator"] == "b0"
    assert pod_of("s1-w0", hostvars, list(hostvars))["job_coordinator"] == "s0-w0"


@pytest.mark.parametrize(
    ("own", "message"),
    [
        ({"tpu_slice_id": 2, "tpu_num_slices": 2}, "tpu_slice_id is 2 and tpu_num_slices 2"),
        ({"tpu_slice_id": 1}, "tpu_slice_id is 1 and tpu_num_slices 1"),
        ({"tpu_slice_id": "one", "tpu_num_slices": 2}, "tpu_slice_id is 'one': not a whole"),
        ({"tpu_num_slices": 0}, "tpu_num_slices 0"),
        ({"tpu_slice_id": 1, "tpu_num_slices": 3}, "no host of that job has tpu_slice_id 0"),
    ],
)
def test_wrong_slice_variables_are_refused(own: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pod_of("h", {"h": {"tpu_node": "n", **own}}, ["h"])


def test_two_hosts_with_one_worker_id_in_a_node_are_refused() -> None:
    # which one coordinates would depend on their names
    hosts = {**STATIC, "a-0-again": {"tpu_node": "a", "tpu_worker_id": 0}}
    with pytest.raises(ValueError, match="a-0 and a-0-again both have tpu_worker_id 0 in node a"):
        pod_of("a-1", hosts, list(hosts))
    # the same id in two nodes is two pods' worker 0
    assert pod_of("b-0", STATIC, list(STATIC))["coordinator"] == "b-0"


def test_published_job_variables_win() -> None:
    own = {
        "tpu_node": "ms-1",
        **pod_vars([("ms-1-w0", "10.1.0.2")]),
        "tpu_queued_resource": "ms",
        "tpu_slice_id": 1,
        "tpu_num_slices": 2,
        "tpu_pod_job_coordinator": "ms-0-w0",
        "tpu_pod_job_coordinator_ip": "10.0.0.2",
    }
    pod = pod_of("ms-1-w0", {"ms-1-w0": own}, ["ms-1-w0"])
    assert (pod["coordinator"], pod["job_coordinator"], pod["job_coordinator_ip"]) == (
        "ms-1-w0",
        "ms-0-w0",
        "10.0.0.2",
    )
    assert (pod["queued_resource"], pod["slice_id"], pod["num_slices"]) == ("ms", 1, 2)


# -- the lookup over the contract --------------------------------------------------------------


class _Templar:
    def template(self, value: Any) -> Any:
        return value


def lookup(terms: list[str], variables: dict[str, Any], **kwargs: Any) -> list[Any]:
    from ansible_collections.cloudtpu.pod.plugins.lookup.pod import LookupModule

    module = LookupModule()
    module._templar = _Templar()  # what Ansible gives a lookup; values here are plain
    return module.run(terms, variables, **kwargs)


def test_the_lookup_returns_the_job_of_a_static_host() -> None:
    variables = {"inventory_hostname": "s1-w1", "groups": {"tpu": list(SLICES)}, "hostvars": SLICES}
    assert lookup(["slice_id", "num_slices", "job_coordinator", "coordinator"], variables) == [
        1,
        2,
        "s0-w0",
        "s1-w0",
    ]


def test_the_lookup_names_a_wrong_slice_variable() -> None:
    from ansible.errors import AnsibleError

    hostvars = {"h": {"tpu_node": "n", "tpu_slice_id": 3, "tpu_num_slices": 2}}
    variables = {"inventory_hostname": "h", "groups": {"tpu": ["h"]}, "hostvars": hostvars}
    with pytest.raises(AnsibleError, match=r"cloudtpu\.pod\.pod: h: tpu_slice_id is 3"):
        lookup([], variables)


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("10.0.0.2", 8476, "10.0.0.2:8476"),
        ("fd00::2", 8476, "[fd00::2]:8476"),
        ("[fd00::2]", "3142", "[fd00::2]:3142"),
        ("pod-w0", 22, "pod-w0:22"),
    ],
)
def test_host_port_brackets_ipv6(host: str, port: Any, expected: str) -> None:
    assert host_port(host, port) == expected


def test_an_ipv6_pod_has_a_bracketed_jax_coordinator_address() -> None:
    """verify.yml's multi-host JAX check connects to this address (it wrote ip:8476 before)."""
    six = {"v-0": {"tpu_node": "v", "tpu_worker_id": 0, "tpu_internal_ip": "fd00::2"}}
    assert pod_of("v-0", six, ["v-0"])["jax_coordinator_address"] == "[fd00::2]:8476"


def test_url_host_filter_brackets_ipv6_only() -> None:
    from ansible_collections.cloudtpu.pod.plugins.filter.url_host import FilterModule

    url_host = FilterModule().filters()["url_host"]
    assert url_host("fd00::2") == "[fd00::2]"
    assert url_host("[fd00::2]") == "[fd00::2]"
    assert url_host(" 10.0.0.2 ") == "10.0.0.2"
    assert url_host("pod-w0") == "pod-w0"


def test_no_role_or_playbook_brackets_an_address_by_hand() -> None:
    """The rule lives in tpu_pod.url_host (the url_host filter); Jinja copies of it drift."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    hand_made = [
        f"{path.relative_to(repo)}:{number}"
        for folder in ("roles", "playbooks")
        for path in sorted((repo / folder).rglob("*.yml"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "'[' ~" in line or '"[" ~' in line
    ]
    assert hand_made == [], f"use the cloudtpu.pod.url_host filter: {hand_made}"
