# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the framework installer's dry run said, as a filter."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import plan

DOCUMENTATION = r"""
name: framework_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What the framework installer's dry run said
description:
  - Takes the registered result of the installer's dry run (uv's lines, or pip's JSON report),
    the installer, and whether the framework is missing from the venv, and returns whether
    anything needs installing and one line of what would change.
positional: _input, name, missing, dist
options:
  _input:
    description: The registered result (skipped when there was no dry run).
    type: dict
    required: true
  name:
    description: The installer, C(uv) or C(pip).
    type: str
    required: true
  missing:
    description: The framework is not in the venv yet (everything is installed).
    type: bool
    default: false
  dist:
    description: The framework's distribution name, for the line.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Decide whether anything needs installing
  ansible.builtin.set_fact:
    todo: "{{ (dry_run | cloudtpu.pod.framework_plan('uv'))['todo'] }}"
"""

RETURN = r"""
_value:
  description: C(todo) (true when something is installed or uninstalled) and C(changes).
  type: dict
"""


def framework_plan(result: dict, name: str, missing: Any = False, dist: str = "") -> dict:
    """cloudtpu.pod.framework_plan."""
    try:
        return plan(result, name, bool(missing), dist)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_plan: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_plan."""

    def filters(self) -> dict[str, Any]:
        return {"framework_plan": framework_plan}
