"""What the emulated service offers: accelerator types, their hosts, and runtime versions.

The emulator's own copy, written from the public Cloud TPU reference (accelerator types and
TPU software versions pages), not shared with the collection's client code: a mistake in the
client's table must show up as a refusal here, as it would against the real service.

Naming, as the service uses it: ``<family>-<size>``. v2, v3, v4 and v5p count TensorCores (two
per chip, four chips per host); v5litepod (v5e) and v6e count chips, one host for 1, 4 or 8
chips and four chips per host from 16 up.

TPU7x (Ironwood) is not served: the public reference offers it through GKE and Compute Engine
machine types, not as TPU API nodes (the v2 AcceleratorConfig.Type enum ends at V6E and the TPU
software versions guide has no runtime for it), so a ``tpu7x-*`` type is refused as the service
refuses any type it does not offer.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

# family -> (what the size counts, sizes offered)
FAMILIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "v2": ("cores", (8, 32, 128, 256, 512)),
    "v3": ("cores", (8, 32, 64, 128, 256, 512, 1024, 2048)),
    "v4": ("cores", (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
    "v5p": ("cores", (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288)),
    "v5litepod": ("chips", (1, 4, 8, 16, 32, 64, 128, 256)),
    "v6e": ("chips", (1, 4, 8, 16, 32, 64, 128, 256)),
}

# acceleratorConfig.type -> family
CONFIG_TYPES: dict[str, str] = {
    "V2": "v2",
    "V3": "v3",
    "V4": "v4",
    "V5P": "v5p",
    "V5LITE_POD": "v5litepod",
    "V6E": "v6e",
}

# The same enum as numbers (AcceleratorConfig.Type), as clients that send enums as integers
# put it in a request body: Google's client libraries do over REST.
CONFIG_TYPE_NUMBERS: dict[int, str] = {
    2: "V2",
    4: "V3",
    7: "V4",
    9: "V5LITE_POD",
    10: "V5P",
    11: "V6E",
}

# Runtime (software) versions each family boots, as patterns. The service answers 400
# INVALID_ARGUMENT for a version the family cannot run (a v5e image on a v4, a v4 image on a v6e).
RUNTIMES: dict[str, tuple[str, ...]] = {
    "v2": ("tpu-ubuntu2204-base", "tpu-vm-base", "tpu-vm-pt-*", "tpu-vm-tf-*", "v2-alpha"),
    "v3": ("tpu-ubuntu2204-base", "tpu-vm-base", "tpu-vm-pt-*", "tpu-vm-tf-*", "v2-alpha"),
    "v4": (
        "tpu-ubuntu2204-base",
        "tpu-vm-v4-base",
        "tpu-vm-v4-pt-*",
        "tpu-vm-tf-*",
        "v2-alpha-tpuv4*",
    ),
    "v5p": ("v2-alpha-tpuv5", "tpu-vm-tf-*"),
    "v5litepod": ("v2-alpha-tpuv5-lite", "tpu-vm-tf-*"),
    "v6e": ("v2-alpha-tpuv6e", "tpu-vm-tf-*"),
}

CORES_PER_CHIP = 2
CHIPS_PER_HOST = 4
_TYPE_RE = re.compile(r"^([a-z][a-z0-9]*?)-([0-9]+)$")


def split_type(name: Any) -> tuple[str, int] | None:
    """``(family, size)`` of ``v4-32`` (or of a full acceleratorTypes resource name)."""
    if not isinstance(name, str):
        return None
    match = _TYPE_RE.match(name.strip().rsplit("/", 1)[-1].lower())
    if not match:
        return None
    return match.group(1), int(match.group(2))


def is_offered(name: Any) -> bool:
    """True for a known family with one of the sizes the service offers."""
    parts = split_type(name)
    return parts is not None and parts[0] in FAMILIES and parts[1] in FAMILIES[parts[0]][1]


def hosts(name: Any) -> int | None:
    """Worker hosts of an accelerator type; None when the name breaks its family's rule."""
    parts = split_type(name)
    if parts is None or parts[0] not in FAMILIES or parts[1] < 1:
        return None
    family, size = parts
    if FAMILIES[family][0] == "cores":
        per_host = CORES_PER_CHIP * CHIPS_PER_HOST
        return size // per_host if size % per_host == 0 else None
    if size in (1, 4, 8):
        return 1
    return size // CHIPS_PER_HOST if size >= 16 and size % CHIPS_PER_HOST == 0 else None


def offered_types() -> list[str]:
    """Every ``<family>-<size>`` the service offers, family by family."""
    return [f"{family}-{size}" for family, (_, sizes) in FAMILIES.items() for size in sizes]


def type_from_config(config: Any) -> str | None:
    """``acceleratorConfig`` ({type, topology such as 2x2x4}) -> ``<family>-<size>``."""
    if not isinstance(config, Mapping):
        return None
    family = CONFIG_TYPES.get(str(config.get("type", "")).upper())
    topology = config.get("topology")
    if family is None or not isinstance(topology, str) or not topology:
        return None
    chips = 1
    for dim in topology.lower().split("x"):
        if not dim.isdigit() or int(dim) < 1:
            return None
        chips *= int(dim)
    size = chips * CORES_PER_CHIP if FAMILIES[family][0] == "cores" else chips
    return f"{family}-{size}"


def node_type(node: Mapping[str, Any]) -> str:
    """The accelerator type of a Node, from acceleratorType or acceleratorConfig."""
    value = node.get("acceleratorType")
    if isinstance(value, str) and value:
        return value.rsplit("/", 1)[-1]
    return type_from_config(node.get("acceleratorConfig")) or ""


def runtime_fits(name: str, runtime: str) -> bool:
    """True when runtime version ``runtime`` boots on accelerator type ``name``."""
    parts = split_type(name)
    if parts is None or parts[0] not in RUNTIMES:
        return False
    return any(fnmatch.fnmatchcase(runtime, pattern) for pattern in RUNTIMES[parts[0]])


def default_runtime(name: str) -> str:
    """The runtime version the public guide names for a type's generation ("" when unknown)."""
    names = runtimes_for(name)
    return names[0] if names else ""


def runtimes_for(name: str) -> list[str]:
    """The runtime versions (without patterns) a type boots, for error messages."""
    parts = split_type(name)
    if parts is None:
        return []
    return [r for r in RUNTIMES.get(parts[0], ()) if "*" not in r]
