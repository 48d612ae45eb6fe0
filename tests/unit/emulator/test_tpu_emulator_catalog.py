"""The emulator's own catalog: accelerator types and the runtime versions each family boots.

The emulator keeps its table apart from the collection's (plugins/module_utils/tpu_facts.py), so
these tests also hold the two against each other: every default the client would send must be
accepted, and a pair the public reference does not allow is refused with 400 INVALID_ARGUMENT.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_facts

from tools.tpu_emulator import catalog
from tools.tpu_emulator.testing import REPO, call, serve

P = "proj"
ZONE = "us-east1-d"
CREATE = f"/v2/projects/{P}/locations/{ZONE}/nodes?nodeId=n1"
QUEUE = f"/v2/projects/{P}/locations/{ZONE}/queuedResources?queuedResourceId=q1"
STATE: dict[str, Any] = {"projects": {P: {"zones": {ZONE: {}}}}}


def create(body: dict[str, Any], settings: dict[str, Any] | None = None) -> tuple[int, dict]:
    with serve({**STATE, "settings": {"operation_delay": 0, **(settings or {})}}) as srv:
        return call(srv.root_url, "POST", CREATE, body)


@pytest.mark.parametrize(
    ("accelerator_type", "runtime"),
    [
        ("v2-8", "tpu-ubuntu2204-base"),
        ("v3-32", "tpu-ubuntu2204-base"),
        ("v4-16", "tpu-ubuntu2204-base"),
        ("v5litepod-16", "v2-alpha-tpuv5-lite"),
        ("v5p-8", "v2-alpha-tpuv5"),
        ("v6e-8", "v2-alpha-tpuv6e"),
    ],
)
def test_each_generation_boots_its_own_image(accelerator_type: str, runtime: str) -> None:
    assert catalog.default_runtime(accelerator_type) == runtime
    status, body = create({"acceleratorType": accelerator_type, "runtimeVersion": runtime})
    assert status == 200, body


@pytest.mark.parametrize("family", sorted(tpu_facts.TABLE))
def test_the_clients_default_for_each_family_is_accepted(family: str) -> None:
    """The collection's table against the emulator's: the client's pick must boot."""
    accelerator_type = f"{family}-{tpu_facts.TABLE[family].sizes[0]}"
    runtime = tpu_facts.default_runtime_version(accelerator_type)
    status, body = create({"acceleratorType": accelerator_type, "runtimeVersion": runtime})
    assert status == 200, (accelerator_type, runtime, body)


@pytest.mark.parametrize(
    ("accelerator_type", "runtime"),
    [
        ("v5litepod-8", "tpu-ubuntu2204-base"),
        ("v5p-8", "v2-alpha-tpuv5-lite"),
        ("v6e-4", "v2-alpha-tpuv5"),
        ("v4-8", "v2-alpha-tpuv6e"),
        ("v2-8", "r"),
    ],
)
def test_a_mismatched_pair_is_invalid_argument(accelerator_type: str, runtime: str) -> None:
    status, body = create({"acceleratorType": accelerator_type, "runtimeVersion": runtime})
    error = body["error"]
    assert (status, error["code"], error["status"]) == (400, 400, "INVALID_ARGUMENT"), body
    assert f"Runtime version '{runtime}' is not supported" in error["message"], error
    assert f"accelerator type '{accelerator_type}'" in error["message"], error
    violations = error["details"][0]["fieldViolations"]
    assert violations[0]["field"] == "node.runtime_version", error


def test_a_mismatched_pair_in_a_queued_resource_is_refused_before_anything_exists() -> None:
    node = {"acceleratorType": "v6e-8", "runtimeVersion": "tpu-ubuntu2204-base"}
    request = {"tpu": {"nodeSpec": [{"nodeId": "n1", "node": node}]}}
    with serve({**STATE, "settings": {"operation_delay": 0}}) as srv:
        status, body = call(srv.root_url, "POST", QUEUE, request)
        listed = call(srv.root_url, "GET", f"/v2/projects/{P}/locations/{ZONE}/queuedResources")
    assert (status, body["error"]["status"]) == (400, "INVALID_ARGUMENT"), body
    assert "v2-alpha-tpuv6e" in body["error"]["message"], body
    assert listed[1].get("queuedResources", []) == [], listed


@pytest.mark.parametrize("accelerator_type", ["v9-8", "v4-12", "v5litepod-2", "tpu7x-8"])
def test_an_unknown_type_is_invalid_argument(accelerator_type: str) -> None:
    status, body = create(
        {"acceleratorType": accelerator_type, "runtimeVersion": "tpu-ubuntu2204-base"}
    )
    assert (status, body["error"]["status"]) == (400, "INVALID_ARGUMENT"), body
    assert f"Accelerator type '{accelerator_type}' is not supported" in body["error"]["message"]


def test_runtime_validation_can_be_switched_off() -> None:
    body = {"acceleratorType": "v6e-8", "runtimeVersion": "tpu-ubuntu2204-base"}
    assert create(body, {"validate_runtime_versions": False})[0] == 200
    assert create(body)[0] == 400


def test_the_two_tables_name_the_same_families() -> None:
    """Each table is its own; a generation added to one (TPU7x, say) and not the other fails."""
    mine = {family: (row.counts, row.sizes) for family, row in tpu_facts.TABLE.items()}
    assert mine == catalog.FAMILIES
    assert tpu_facts.CONFIG_TYPES == catalog.CONFIG_TYPES


def test_hosts_follow_the_naming_rules() -> None:
    assert [catalog.hosts(t) for t in ("v4-8", "v4-32", "v5p-16", "v5litepod-8")] == [1, 4, 2, 1]
    assert [catalog.hosts(t) for t in ("v5litepod-16", "v6e-256", "v4-12", "x-8")] == [
        4,
        64,
        None,
        None,
    ]
    assert catalog.type_from_config({"type": "V4", "topology": "2x2x2"}) == "v4-16"
    assert catalog.type_from_config({"type": "V6E", "topology": "4x4"}) == "v6e-16"


def test_the_emulator_does_not_load_the_collections_code() -> None:
    """Its own table, not the client's: no import of plugins/ by module or by path."""
    pattern = re.compile(r"ansible_collections|module_utils|plugins/|tpu_facts")
    sources = sorted((Path(REPO) / "tools" / "tpu_emulator").glob("*.py"))
    assert sources, "no emulator sources found"
    offenders = [p.name for p in sources if pattern.search(p.read_text())]
    assert offenders == [], f"emulator modules refer to the collection's code: {offenders}"
