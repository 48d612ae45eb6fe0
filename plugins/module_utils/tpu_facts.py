# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Facts about Cloud TPU accelerator types, as pure functions.

The TPU API names a slice ``<family>-<size>``. For v2, v3, v4 and v5p the size counts
TensorCores (two per chip, four chips per host, so eight cores per host). For v5e (API family
``v5litepod``) and v6e the size counts chips: sizes 1, 4 and 8 are a single host holding all the
chips; from 16 up each host holds four chips.

Nothing here talks to the network or imports anything outside the standard library, so the
inventory plugin, the modules and the local API emulator can share it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

UNKNOWN = "unknown"

# API family prefix -> (generation name used in groups and variables, what the size counts)
FAMILIES: dict[str, tuple[str, str]] = {
    "v2": ("v2", "cores"),
    "v3": ("v3", "cores"),
    "v4": ("v4", "cores"),
    "v5p": ("v5p", "cores"),
    "v5litepod": ("v5e", "chips"),
    "v6e": ("v6e", "chips"),
}

# acceleratorConfig.type enum value -> API family prefix
CONFIG_TYPES: dict[str, str] = {
    "V2": "v2",
    "V3": "v3",
    "V4": "v4",
    "V5P": "v5p",
    "V5LITE_POD": "v5litepod",
    "V6E": "v6e",
}

DEVICE_GLOBS: dict[str, str] = {
    "v2": "/dev/accel*",
    "v3": "/dev/accel*",
    "v4": "/dev/accel*",
    "v5e": "/dev/vfio/[0-9]*",
    "v5p": "/dev/vfio/[0-9]*",
    "v6e": "/dev/vfio/[0-9]*",
}

# Slice sizes the public API offers per family (used by the emulator to reject unknown types
# the way the API does, and by modules to warn early). Well-formed but unlisted sizes are still
# understood by accelerator_facts().
SUPPORTED_SIZES: dict[str, tuple[int, ...]] = {
    "v2": (8, 32, 128, 256, 512),
    "v3": (8, 32, 64, 128, 256, 512, 1024, 2048),
    "v4": tuple(8 * 2**i for i in range(10)),  # 8 .. 4096
    "v5p": (*(8 * 2**i for i in range(11)), 12288),  # 8 .. 8192, 12288
    "v5litepod": (1, 4, 8, 16, 32, 64, 128, 256),
    "v6e": (1, 4, 8, 16, 32, 64, 128, 256),
}

CORES_PER_HOST = 8
CHIPS_PER_HOST = 4
CORES_PER_CHIP = 2

_TYPE_RE = re.compile(r"^(?P<family>[a-z][a-z0-9]*?)-(?P<size>[0-9]+)$")


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
    ``v5e`` ``v5p`` ``v6e`` or ``unknown``), ``size``, ``hosts``, ``chips``, ``chips_per_host``
    and ``device_glob``. Unknown families and sizes that break the family's naming rule give
    generation ``unknown`` with the counts set to None and an empty device glob; nothing raises.
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
    }


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
