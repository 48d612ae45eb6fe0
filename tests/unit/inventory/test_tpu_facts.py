"""Accelerator type -> generation, hosts, chips, device glob (plugins/module_utils/tpu_facts.py)."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_facts

ACCEL = "/dev/accel*"
VFIO = "/dev/vfio/[0-9]*"

# accelerator type, generation, hosts, chips, chips per host, device glob
KNOWN = [
    ("v2-8", "v2", 1, 4, 4, ACCEL),
    ("v2-32", "v2", 4, 16, 4, ACCEL),
    ("v3-8", "v3", 1, 4, 4, ACCEL),
    ("v3-128", "v3", 16, 64, 4, ACCEL),
    ("v4-8", "v4", 1, 4, 4, ACCEL),
    ("v4-16", "v4", 2, 8, 4, ACCEL),
    ("v4-32", "v4", 4, 16, 4, ACCEL),
    ("v4-4096", "v4", 512, 2048, 4, ACCEL),
    ("v5p-8", "v5p", 1, 4, 4, VFIO),
    ("v5p-16", "v5p", 2, 8, 4, VFIO),
    ("v5p-128", "v5p", 16, 64, 4, VFIO),
    ("v5litepod-1", "v5e", 1, 1, 1, VFIO),
    ("v5litepod-4", "v5e", 1, 4, 4, VFIO),
    ("v5litepod-8", "v5e", 1, 8, 8, VFIO),
    ("v5litepod-16", "v5e", 4, 16, 4, VFIO),
    ("v5litepod-256", "v5e", 64, 256, 4, VFIO),
    ("v6e-1", "v6e", 1, 1, 1, VFIO),
    ("v6e-4", "v6e", 1, 4, 4, VFIO),
    ("v6e-8", "v6e", 1, 8, 8, VFIO),
    ("v6e-16", "v6e", 4, 16, 4, VFIO),
    ("v6e-256", "v6e", 64, 256, 4, VFIO),
    # names as some API fields carry them
    ("projects/p/locations/us-central2-b/acceleratorTypes/v4-32", "v4", 4, 16, 4, ACCEL),
    (" V4-8 ", "v4", 1, 4, 4, ACCEL),
]


@pytest.mark.parametrize(("accel", "gen", "hosts", "chips", "per_host", "glob"), KNOWN)
def test_known_types(
    accel: str, gen: str, hosts: int, chips: int, per_host: int, glob: str
) -> None:
    facts = tpu_facts.accelerator_facts(accel)
    assert (facts["generation"], facts["hosts"], facts["chips"], facts["chips_per_host"]) == (
        gen,
        hosts,
        chips,
        per_host,
    )
    assert facts["device_glob"] == glob
    assert facts["hosts"] * facts["chips_per_host"] == facts["chips"]


UNKNOWN = [
    None,
    "",
    42,
    ["v4-8"],
    "v4",
    "v4-",
    "-8",
    "v4-x",
    "v4-8-8",
    "v4-0",
    "v4-12",  # TensorCore counts come in hosts of 8
    "v5p-4",
    "v5litepod-2",
    "v5litepod-12",
    "v6e-3",
    "v7-8",
    "tpu7x-8",
    "v5e-8",  # the API calls v5e "v5litepod"
    "gpu-8",
    "v4-32; rm -rf /",
]


@pytest.mark.parametrize("accel", UNKNOWN)
def test_unknown_or_malformed_types(accel: object) -> None:
    facts = tpu_facts.accelerator_facts(accel)
    assert facts["generation"] == "unknown"
    assert facts["hosts"] is None
    assert facts["chips"] is None
    assert facts["chips_per_host"] is None
    assert facts["device_glob"] == ""
    assert tpu_facts.generation(accel) == "unknown"
    assert tpu_facts.is_supported(accel) is False


@pytest.mark.parametrize(
    ("accel", "supported"),
    [
        ("v4-32", True),
        ("v5litepod-16", True),
        ("v6e-8", True),
        ("v5p-16", True),
        ("v2-8", True),
        ("v2-16", False),  # well formed, not offered
        ("v5litepod-512", False),
        ("v4-9", False),
    ],
)
def test_is_supported(accel: str, supported: bool) -> None:
    assert tpu_facts.is_supported(accel) is supported


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"type": "V4", "topology": "2x2x2"}, "v4-16"),
        ({"type": "V5P", "topology": "2x2x1"}, "v5p-8"),
        ({"type": "V5LITE_POD", "topology": "4x4"}, "v5litepod-16"),
        ({"type": "V6E", "topology": "2x4"}, "v6e-8"),
        ({"type": "V4", "topology": "2x2xa"}, None),
        ({"type": "V4", "topology": ""}, None),
        ({"type": "V9", "topology": "2x2"}, None),
        ({"topology": "2x2"}, None),
        ("V4", None),
        (None, None),
    ],
)
def test_type_from_accelerator_config(config: object, expected: str | None) -> None:
    assert tpu_facts.type_from_accelerator_config(config) == expected


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"acceleratorType": "v4-8"}, "v4-8"),
        ({"acceleratorType": "projects/p/locations/z/acceleratorTypes/v6e-8"}, "v6e-8"),
        ({"acceleratorConfig": {"type": "V5LITE_POD", "topology": "2x2"}}, "v5litepod-4"),
        ({"acceleratorType": "", "acceleratorConfig": {"type": "V4", "topology": "2x2x1"}}, "v4-8"),
        ({}, ""),
        ({"acceleratorType": 7}, ""),
    ],
)
def test_node_accelerator_type(node: dict, expected: str) -> None:
    assert tpu_facts.node_accelerator_type(node) == expected


@pytest.mark.parametrize(
    ("accel", "runtime"),
    [
        ("v2-8", "tpu-ubuntu2204-base"),
        ("v3-32", "tpu-ubuntu2204-base"),
        ("v4-16", "tpu-ubuntu2204-base"),
        ("v5litepod-16", "v2-alpha-tpuv5-lite"),
        ("v5p-128", "v2-alpha-tpuv5"),
        ("v6e-8", "v2-alpha-tpuv6e"),
        ("projects/p/locations/z/acceleratorTypes/v6e-256", "v2-alpha-tpuv6e"),
        ("v9-8", ""),
        ("v4-12", ""),
        (None, ""),
    ],
)
def test_each_generation_has_its_default_runtime_version(accel, runtime):
    assert tpu_facts.default_runtime_version(accel) == runtime
    assert tpu_facts.accelerator_facts(accel)["runtime_version"] == runtime


def test_the_views_come_from_the_one_table():
    for family, row in tpu_facts.TABLE.items():
        assert tpu_facts.FAMILIES[family] == (row.generation, row.counts)
        assert tpu_facts.CONFIG_TYPES[row.config_type] == family
        assert tpu_facts.SUPPORTED_SIZES[family] == row.sizes
        assert tpu_facts.DEVICE_GLOBS[row.generation] == row.device_glob
        assert tpu_facts.RUNTIME_VERSIONS[row.generation] == row.runtime_version
    assert len(tpu_facts.CONFIG_TYPES) == len(tpu_facts.TABLE)
