# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Facts about Cloud TPU accelerator types, as pure functions.

The TPU API names a slice ``<family>-<size>``. For v2, v3, v4 and v5p the size counts
TensorCores (two per chip, four chips per host, so eight cores per host). For v5e (API family
``v5litepod``) and v6e the size counts chips: sizes 1, 4 and 8 are a single host holding all the
chips; from 16 up each host holds four chips.

Nothing here talks to the network or imports anything outside the standard library, so the
inventory plugin, the modules and the playbooks' filters can share it. The local API emulator
keeps its own table (tools/tpu_emulator/catalog.py), so a mistake here shows up there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

UNKNOWN = "unknown"


class Family(NamedTuple):
    """One accelerator family as the TPU API names it, with what the code needs to know."""

    generation: str  # name used in groups and variables (tpu_gen_<generation>)
    counts: str  # what the size in <family>-<size> counts: "cores" or "chips"
    config_type: str  # acceleratorConfig.type enum value
    sizes: tuple[int, ...]  # slice sizes the public API offers
    device_glob: str  # the TPU devices on each worker
    runtime_version: str  # the software version the public guide names for this generation


# The one table of accelerator families (API family prefix -> facts). Runtime versions follow the
# public TPU software versions guide: v4 and older boot tpu-ubuntu2204-base, v5e, v5p and v6e
# each have their own image. TPU7x (Ironwood) has no entry: the Cloud TPU docs' "TPU7x
# (Ironwood)" page offers it through GKE and as Compute Engine TPU machine types, the TPU
# software versions guide names no runtime version for it, and the TPU v2 API's
# AcceleratorConfig.Type enum (reference and google-cloud-tpu 1.28) ends at V6E, so the TPU API
# creates no TPU7x nodes (checked 2026-11). A node of an unlisted family gets generation unknown.
TABLE: dict[str, Family] = {
    "v2": Family("v2", "cores", "V2", (8, 32, 128, 256, 512), "/dev/accel*", "tpu-ubuntu2204-base"),
    "v3": Family(
        "v3",
        "cores",
        "V3",
        (8, 32, 64, 128, 256, 512, 1024, 2048),
        "/dev/accel*",
        "tpu-ubuntu2204-base",
    ),
    "v4": Family(
        "v4",
        "cores",
        "V4",
        tuple(8 * 2**i for i in range(10)),  # 8 .. 4096
        "/dev/accel*",
        "tpu-ubuntu2204-base",
    ),
    "v5p": Family(
        "v5p",
        "cores",
        "V5P",
        (*(8 * 2**i for i in range(11)), 12288),  # 8 .. 8192, 12288
        "/dev/vfio/[0-9]*",
        "v2-alpha-tpuv5",
    ),
    "v5litepod": Family(
        "v5e",
        "chips",
        "V5LITE_POD",
        (1, 4, 8, 16, 32, 64, 128, 256),
        "/dev/vfio/[0-9]*",
        "v2-alpha-tpuv5-lite",
    ),
    "v6e": Family(
        "v6e",
        "chips",
        "V6E",
        (1, 4, 8, 16, 32, 64, 128, 256),
        "/dev/vfio/[0-9]*",
        "v2-alpha-tpuv6e",
    ),
}

# Views of the table, by the keys other code looks things up with.
FAMILIES: dict[str, tuple[str, str]] = {k: (f.generation, f.counts) for k, f in TABLE.items()}
CONFIG_TYPES: dict[str, str] = {f.config_type: k for k, f in TABLE.items()}
DEVICE_GLOBS: dict[str, str] = {f.generation: f.device_glob for f in TABLE.values()}
SUPPORTED_SIZES: dict[str, tuple[int, ...]] = {k: f.sizes for k, f in TABLE.items()}
RUNTIME_VERSIONS: dict[str, str] = {f.generation: f.runtime_version for f in TABLE.values()}

CORES_PER_HOST = 8
CHIPS_PER_HOST = 4
CORES_PER_CHIP = 2

_TYPE_RE = re.compile(r"^(?P<family>[a-z][a-z0-9]*?)-(?P<size>[0-9]+)\Z")


def _unknown(accelerator_type: Any) -> dict[str, Any]:
    return {
        "accelerator_type": accelerator_type if isinstance(accelerator_type, str) else "",
        "family": "",
        "generation": UNKNOWN,
        "size": None,
        "hosts": None,
        "chips": None,
        "chips_per_host": None,
        "device_glob": "",
        "runtime_version": "",
    }


def split_accelerator_type(accelerator_type: Any) -> tuple[str, int] | None:
    """Return ``(family, size)`` for a string like ``v4-32``, or None when it is malformed.

    A full resource name (``projects/p/locations/z/acceleratorTypes/v4-8``) is accepted too.
    """
    if not isinstance(accelerator_type, str):
        return None
    name = accelerator_type.strip().rsplit("/", 1)[-1].lower()
    match = _TYPE_RE.match(name)
    if not match:
        return None
    return match.group("family"), int(match.group("size"))


def accelerator_facts(accelerator_type: Any) -> dict[str, Any]:
    """Describe an accelerator type.

    Returns a dict with ``accelerator_type``, ``family``, ``generation`` (``v2`` ``v3`` ``v4``
    ``v5e`` ``v5p`` ``v6e`` or ``unknown``), ``size``, ``hosts``, ``chips``, ``chips_per_host``,
    ``device_glob`` and ``runtime_version`` (the generation's usual software version). Unknown
    families and sizes that break the family's naming rule give generation ``unknown`` with the
    counts set to None and empty strings; nothing raises.
    """
    parts = split_accelerator_type(accelerator_type)
    if parts is None:
        return _unknown(accelerator_type)
    family, size = parts
    if family not in FAMILIES or size < 1:
        return _unknown(accelerator_type)
    generation, unit = FAMILIES[family]
    if unit == "cores":
        if size % CORES_PER_HOST != 0:
            return _unknown(accelerator_type)
        chips = size // CORES_PER_CHIP
        hosts = size // CORES_PER_HOST
        chips_per_host = CHIPS_PER_HOST
    else:
        if size in (1, 4, 8):
            hosts, chips_per_host = 1, size
        elif size >= 16 and size % CHIPS_PER_HOST == 0:
            hosts, chips_per_host = size // CHIPS_PER_HOST, CHIPS_PER_HOST
        else:
            return _unknown(accelerator_type)
        chips = size
    return {
        "accelerator_type": f"{family}-{size}",
        "family": family,
        "generation": generation,
        "size": size,
        "hosts": hosts,
        "chips": chips,
        "chips_per_host": chips_per_host,
        "device_glob": DEVICE_GLOBS[generation],
        "runtime_version": RUNTIME_VERSIONS[generation],
    }


def default_runtime_version(accelerator_type: Any) -> str:
    """The runtime version a node of this type boots when none is named ("" when unknown)."""
    return accelerator_facts(accelerator_type)["runtime_version"]


def generation(accelerator_type: Any) -> str:
    """The generation name of an accelerator type (``unknown`` when not recognised)."""
    return accelerator_facts(accelerator_type)["generation"]


def is_supported(accelerator_type: Any) -> bool:
    """True when the type is well formed and its size is one the public API offers."""
    facts = accelerator_facts(accelerator_type)
    if facts["generation"] == UNKNOWN:
        return False
    return facts["size"] in SUPPORTED_SIZES[facts["family"]]


def topology_chips(topology: Any) -> int | None:
    """Number of chips in a topology string such as ``2x2x4``; None when malformed."""
    if not isinstance(topology, str) or not topology:
        return None
    total = 1
    for dim in topology.lower().split("x"):
        if not dim.isdigit() or int(dim) < 1:
            return None
        total *= int(dim)
    return total


def type_from_accelerator_config(config: Any) -> str | None:
    """Translate an ``acceleratorConfig`` ({type, topology}) into the ``<family>-<size>`` name."""
    if not isinstance(config, Mapping):
        return None
    family = CONFIG_TYPES.get(str(config.get("type", "")).upper())
    chips = topology_chips(config.get("topology"))
    if family is None or chips is None:
        return None
    unit = FAMILIES[family][1]
    size = chips * CORES_PER_CHIP if unit == "cores" else chips
    return f"{family}-{size}"


def node_accelerator_type(node: Mapping[str, Any]) -> str:
    """The accelerator type of a node JSON object, from acceleratorType or acceleratorConfig."""
    value = node.get("acceleratorType")
    if isinstance(value, str) and value:
        return value.rsplit("/", 1)[-1]
    derived = type_from_accelerator_config(node.get("acceleratorConfig"))
    return derived or ""
