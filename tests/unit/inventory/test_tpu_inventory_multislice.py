"""Multislice in the tpu_vm inventory: the nodes of one queued resource form one job, each node
a slice with its id, the job's size, its coordinator (worker 0 of slice 0) and groups."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import (
    tpu_inventory_hosts as inventory_hosts,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import slice_ids

QR = "projects/proj-1/locations/us-central2-b/queuedResources/{}"


def node(name: str, subnet: int, queued: str = "", state: str = "READY", **extra: Any) -> dict:
    body: dict[str, Any] = {
        "name": f"projects/proj-1/locations/us-central2-b/nodes/{name}",
        "acceleratorType": "v4-16",
        "state": state,
        "networkEndpoints": [{"ipAddress": f"10.{subnet}.0.{i + 2}"} for i in range(2)],
        **extra,
    }
    if queued:
        body["queuedResource"] = QR.format(queued)
    return body


def hosts_of(nodes: list[dict[str, Any]], **options: Any) -> dict[str, tuple[dict, list[str]]]:
    data = {"projects": {"proj-1": {"nodes": nodes}}}
    built, _warnings = inventory_hosts.build_hosts(data, **options)
    return {name: (hostvars, groups) for name, hostvars, groups in built}


JOB_KEYS = (
    "tpu_queued_resource",
    "tpu_slice_id",
    "tpu_num_slices",
    "tpu_pod_job_coordinator",
    "tpu_pod_job_coordinator_ip",
)


def job(hostvars: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(hostvars[key] for key in JOB_KEYS)


def test_two_slices_of_one_queued_resource_form_one_job() -> None:
    # Listed out of order, beside a plain node and a single-node request.
    hosts = hosts_of(
        [
            node("ms-1", 1, "ms"),
            node("solo", 9),
            node("ms-0", 0, "ms"),
            node("one", 8, "one-qr"),
        ]
    )
    assert {name: job(hv) for name, (hv, _g) in hosts.items()} == {
        "ms-0-w0": ("ms", 0, 2, "ms-0-w0", "10.0.0.2"),
        "ms-0-w1": ("ms", 0, 2, "ms-0-w0", "10.0.0.2"),
        "ms-1-w0": ("ms", 1, 2, "ms-0-w0", "10.0.0.2"),
        "ms-1-w1": ("ms", 1, 2, "ms-0-w0", "10.0.0.2"),
        "solo-w0": ("", 0, 1, "solo-w0", "10.9.0.2"),
        "solo-w1": ("", 0, 1, "solo-w0", "10.9.0.2"),
        "one-w0": ("one-qr", 0, 1, "one-w0", "10.8.0.2"),
        "one-w1": ("one-qr", 0, 1, "one-w0", "10.8.0.2"),
    }
    # Each slice keeps its own pod (the per-slice services use it).
    hv = hosts["ms-1-w1"][0]
    assert (hv["tpu_pod_coordinator"], hv["tpu_pod_ips"]) == ("ms-1-w0", ["10.1.0.2", "10.1.0.3"])
    groups = hosts["ms-1-w1"][1]
    assert {"tpu_multislice_ms", "tpu_slice_ms_1", "tpu_node_ms_1"} <= set(groups)
    assert "tpu_slice_ms_0" not in groups
    assert not [g for g in hosts["one-w0"][1] if g.startswith(("tpu_slice_", "tpu_multislice_"))]
    assert not [g for g in hosts["solo-w0"][1] if g.startswith(("tpu_slice_", "tpu_multislice_"))]


def test_a_filtered_out_slice_keeps_the_others_numbers_and_coordinator() -> None:
    # Slice 0 preempted and left out by states=[READY]: slice 1 is still 1 of 2.
    hosts = hosts_of([node("big-0", 0, "big", state="PREEMPTED"), node("big-1", 1, "big")])
    assert set(hosts) == {"big-1-w0", "big-1-w1"}
    assert job(hosts["big-1-w0"][0]) == ("big", 1, 2, "big-0-w0", "10.0.0.2")


def test_the_api_mark_makes_a_lone_listed_node_a_slice() -> None:
    hosts = hosts_of([node("x-1", 1, "x", multisliceNode=True)])
    assert job(hosts["x-1-w0"][0]) == ("x", 1, 2, "", "")
    # Without the mark, a lone node named like a slice is slice 0 of 1.
    hosts = hosts_of([node("y-7", 1, "y")])
    assert job(hosts["y-7-w0"][0])[:3] == ("y", 0, 1)


def test_host_name_template_and_projects_apply_to_the_job_coordinator() -> None:
    hosts = hosts_of(
        [node("ms-0", 0, "ms"), node("ms-1", 1, "ms")], hostname="{project}-{node}-{worker_id}"
    )
    assert hosts["proj-1-ms-1-1"][0]["tpu_pod_job_coordinator"] == "proj-1-ms-0-0"


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["p-1", "p-0"], ({"p-0": 0, "p-1": 1}, 2)),
        (["p-10", "p-2", "p-0"], ({"p-0": 0, "p-2": 2, "p-10": 10}, 11)),
        # Not the API's naming (two prefixes, no number, repeats): the order of the names.
        (["a-0", "b-1"], ({"a-0": 0, "b-1": 1}, 2)),
        (["left", "right"], ({"left": 0, "right": 1}, 2)),
        (["p-01", "p-1"], ({"p-01": 0, "p-1": 1}, 2)),
    ],
)
def test_slice_ids(ids: list[str], expected: tuple[dict[str, int], int]) -> None:
    assert slice_ids(ids) == expected


def test_wrap_reaches_the_job_variables() -> None:
    data = {"projects": {"proj-1": {"nodes": [node("ms-0", 0, "ms"), node("ms-1", 1, "ms")]}}}
    built, _ = inventory_hosts.build_hosts(data, wrap=lambda v: ("wrapped", v))
    hostvars = dict((name, hv) for name, hv, _g in built)["ms-1-w0"]
    assert hostvars["tpu_slice_id"] == ("wrapped", 1)
    assert hostvars["tpu_pod_job_coordinator_ip"] == ("wrapped", "10.0.0.2")


def test_slim_node_keeps_the_queued_resource_fields() -> None:
    slim = inventory_hosts.slim_node(node("ms-0", 0, "ms", multisliceNode=True))
    assert slim["queuedResource"] == QR.format("ms") and slim["multisliceNode"] is True
