"""cloudtpu.pod.tpu_node_info against the in-memory emulator: the inventory's filters, get, list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.module_harness import PROJECT, ZONE, Api, run_module, serve, state

EAST = "us-east1-d"
WEST = "us-west4-a"


def entry(
    node_id: str, accel: str, node_state: str = "READY", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "nodeId": node_id,
        "acceleratorType": accel,
        "runtimeVersion": "tpu-ubuntu2204-base",
        "state": node_state,
        "networkConfig": {"network": "default", "enableExternalIps": True},
    }
    if labels:
        node["labels"] = labels
    return node


NODES = {
    ZONE: [
        entry("pod-a", "v4-16", labels={"team": "vision"}),
        entry("pod-b", "v4-8", "PREEMPTED", labels={"team": "audio"}),
    ],
    EAST: [entry("dev-1", "v5litepod-8", labels={"team": "vision", "owner": "ana"})],
    WEST: [entry("pod-c", "v5litepod-16", "CREATING")],
}


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    with serve(state(*NODES.items())) as emulator:
        yield emulator


def info(api: Api, **args: Any) -> list[dict[str, Any]]:
    outcome = run_module("tpu_node_info", api.auth(**args))
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is False
    return outcome["nodes"]


FILTERS = [
    ({}, ["pod-a", "pod-b", "dev-1", "pod-c"]),
    ({"states": ["READY"]}, ["pod-a", "dev-1"]),
    ({"states": ["preempted", "TERMINATED"]}, ["pod-b"]),
    ({"labels": {"team": "vision"}}, ["pod-a", "dev-1"]),
    ({"labels": {"owner": "*"}}, ["dev-1"]),
    ({"labels": {"team": "a*"}}, ["pod-b"]),
    ({"accelerator_types": ["v5litepod-*"]}, ["dev-1", "pod-c"]),
    ({"accelerator_types": ["v4-8", "v4-16"]}, ["pod-a", "pod-b"]),
    ({"names": ["pod-*"]}, ["pod-a", "pod-b", "pod-c"]),
    ({"zones": [EAST, WEST]}, ["dev-1", "pod-c"]),
    ({"states": ["READY"], "labels": {"team": "vision"}, "names": ["pod-*"]}, ["pod-a"]),
]


@pytest.mark.parametrize(("filters", "expected"), FILTERS, ids=[str(f) for f, _ in FILTERS])
def test_filters_keep_what_the_inventory_keeps(
    api: Api, filters: dict[str, Any], expected: list[str]
) -> None:
    from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_hosts import (
        node_matches,
    )

    got = sorted(n["name"] for n in info(api, **filters))
    assert got == sorted(expected)
    # The inventory plugin's own filter function, applied to the same API data, agrees.
    everything = info(api, zones=filters.get("zones", []))
    inventory_view = sorted(
        n["name"]
        for n in everything
        if node_matches(
            n["resource"],
            states=filters.get("states", []),
            labels=filters.get("labels", {}),
            accelerator_types=filters.get("accelerator_types", []),
            names=filters.get("names", []),
        )
    )
    assert got == inventory_view


def test_get_one_node_in_one_zone_reads_it_directly(api: Api) -> None:
    api.reset_calls()
    nodes = info(api, zones=[ZONE], name="pod-a")
    assert [n["name"] for n in nodes] == ["pod-a"]
    assert api.calls() == {"GET nodes.get": 1}
    pod = nodes[0]
    assert pod["project"] == PROJECT and pod["zone"] == ZONE
    assert pod["accelerator_type"] == "v4-16" and pod["generation"] == "v4"
    assert pod["worker_count"] == 2 and len(pod["workers"]) == 2
    assert pod["spec"]["labels"] == {"team": "vision"}
    assert pod["resource"]["name"] == f"projects/{PROJECT}/locations/{ZONE}/nodes/pod-a"


def test_get_a_missing_node_is_an_empty_list(api: Api) -> None:
    assert info(api, zones=[ZONE], name="nope") == []


def test_name_without_zone_searches_every_zone(api: Api) -> None:
    nodes = info(api, name="dev-1")
    assert [(n["name"], n["zone"]) for n in nodes] == [("dev-1", EAST)]


def test_the_returned_spec_recreates_an_identical_node(api: Api) -> None:
    """The spec is in tpu_node's option names: given back to tpu_node it changes nothing."""
    spec = info(api, zones=[EAST], name="dev-1")[0]["spec"]
    outcome = run_module("tpu_node", api.auth(name="dev-1", zone=EAST, **spec))
    assert not outcome.failed, outcome.msg
    assert outcome["changed"] is False, outcome["differences"]


def test_unreachable_zone_is_a_warning() -> None:
    with serve(state(*NODES.items())) as api:
        api.admin("POST", "faults", {"unreachable": {PROJECT: [WEST]}})
        outcome = run_module("tpu_node_info", api.auth())
    assert not outcome.failed, outcome.msg
    assert "pod-c" not in [n["name"] for n in outcome["nodes"]]
    assert any(WEST in w and "unreachable" in w for w in outcome.warnings), outcome.warnings


def test_api_disabled_fails_with_the_fix() -> None:
    with serve(state(api_enabled=False)) as api:
        outcome = run_module("tpu_node_info", api.auth())
    assert outcome.failed
    assert "gcloud services enable tpu.googleapis.com" in outcome.msg, outcome.msg
