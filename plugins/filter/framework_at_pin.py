# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether the venv holds the framework's pinned release already, as a filter."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import at_pin

DOCUMENTATION = r"""
name: framework_at_pin
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Whether the venv holds the framework's pinned release and its tools already
description:
  - Takes the registered result of the framework role's look into the venv
    (C(files/framework_present.py), the framework's version, then the tools missing), whether
    the pinned release and its tools are all there is to install (C(pin_only) of the
    C(framework_specs) filter) and the pinned release. True when nothing needs asking the
    package index, the release being the pinned one with no tool missing.
positional: _input, pin_only, pin
options:
  _input:
    description: The registered result of the look into the venv (skipped without a framework).
    type: dict
    required: true
  pin_only:
    description: Whether the pinned release and its tools are all there is to install.
    type: bool
    required: true
  pin:
    description: The pinned release.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Note whether the framework is already at the pinned release
  ansible.builtin.set_fact:
    at_pin: "{{ present | cloudtpu.pod.framework_at_pin(plan['pin_only'], plan['pin']) }}"
"""

RETURN = r"""
_value:
  description: Whether the venv holds the pinned release and every tool.
  type: bool
"""


def framework_at_pin(present: dict, pin_only: Any, pin: str) -> bool:
    """cloudtpu.pod.framework_at_pin."""
    try:
        return at_pin(present, bool(pin_only), pin)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_at_pin: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_at_pin."""

    def filters(self) -> dict[str, Any]:
        return {"framework_at_pin": framework_at_pin}
