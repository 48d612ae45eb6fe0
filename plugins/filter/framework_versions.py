# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the framework role installed: versions in one line, and a warning when ``latest`` is
held back by the venv's Python."""

from __future__ import annotations

import json
from typing import Any

DOCUMENTATION = r"""
name: framework_versions
author: cloudtpu.pod maintainers
version_added: 0.1.0
short_description: Report the framework versions a venv resolved to
description:
  - Reads the JSON that the framework role's version probe prints (the venv's Python version and
    the installed versions of jax, jaxlib, libtpu, torch, torch_xla) and returns one line for
    the log, plus a warning when O(requested) is C(latest) but the venv's Python keeps the
    framework on an older release line (jax 0.7 and later need Python 3.11; on Python 3.10
    C(latest) resolves to jax 0.6.x).
  - Never fails; a probe that printed nothing gives an empty report.
positional: _input, framework, requested
options:
  _input:
    description: The probe's output, a JSON object (text) or a dict.
    type: raw
    required: true
  framework:
    description: C(jax), C(torch_xla) or C(none).
    type: str
    required: true
  requested:
    description: The requested version, C(latest) or a pin.
    type: str
    default: latest
"""

EXAMPLES = r"""
- name: Report the versions
  ansible.builtin.debug:
    msg: "{{ (probe.stdout | cloudtpu.pod.framework_versions('jax', 'latest'))['message'] }}"
# Python 3.10.13: jax 0.6.2, jaxlib 0.6.2, libtpu 0.0.17
"""

RETURN = r"""
_value:
  description: The report.
  type: dict
  contains:
    versions:
      description: Distribution name to installed version (only those installed), and C(python).
      type: dict
    message:
      description: "One line, such as C(Python 3.10.13: jax 0.6.2, jaxlib 0.6.2, libtpu 0.0.17)."
      type: str
    warning:
      description: Empty, or why C(latest) did not give the newest release line.
      type: str
"""

# The last release of a framework that still supports a Python version (major.minor). Newer
# releases need a newer Python, so "latest" in a venv of that Python stops here.
LAST_RELEASE_FOR_PYTHON: dict[str, dict[str, str]] = {
    "jax": {"3.9": "0.4.30", "3.10": "0.6.2"},
}
# The first Python the following release line needs, for the message.
NEXT_PYTHON: dict[str, str] = {"3.9": "3.10", "3.10": "3.11"}

DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "jax": ("jax", "jaxlib", "libtpu"),
    "torch_xla": ("torch", "torch_xla", "libtpu"),
    "none": (),
}


def _parse(probe: Any) -> dict[str, Any]:
    if isinstance(probe, dict):
        return probe
    for line in reversed(str(probe or "").splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}


def _line(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def framework_versions(probe: Any, framework: str, requested: Any = "latest") -> dict[str, Any]:
    """Summarise the probe's versions and say when ``latest`` was capped by Python."""
    data = _parse(probe)
    python = str(data.get("python") or "")
    found = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    names = DISTRIBUTIONS.get(str(framework), ())
    versions = {name: str(found[name]) for name in names if found.get(name)}
    if not python and not versions:
        return {"versions": {}, "message": "", "warning": ""}
    shown = ", ".join(f"{name} {version}" for name, version in versions.items())
    missing = [name for name in names if name not in versions]
    message = f"Python {python or 'unknown'}: {shown or 'nothing installed'}"
    if missing:
        message += f" (not installed: {', '.join(missing)})"
    warning = ""
    minor = ".".join(python.split(".")[:2])
    last = LAST_RELEASE_FOR_PYTHON.get(str(framework), {}).get(minor)
    installed = versions.get(str(framework), "")
    if str(requested) == "latest" and last and installed and _line(installed) <= _line(last):
        warning = (
            f"tpu_framework_version is 'latest', but the venv runs Python {minor}: the newest "
            f"{framework} for it is the {'.'.join(last.split('.')[:2])} line (installed "
            f"{installed}); newer {framework} releases need Python {NEXT_PYTHON[minor]} or later. "
            f"Set tpu_python_version to '{NEXT_PYTHON[minor]}' or newer for current releases, or "
            f"pin tpu_framework_version to keep this one."
        )
    return {"versions": {"python": python, **versions}, "message": message, "warning": warning}


class FilterModule:
    """The framework_versions filter."""

    def filters(self) -> dict[str, Any]:
        return {"framework_versions": framework_versions}
