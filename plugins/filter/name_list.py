# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A list of names as users give it (module_utils/tpu_name_checks.py) as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import name_list

DOCUMENTATION = r"""
name: name_list
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: A list of names, from a list or a comma-separated string
description:
  - Reads a variable that holds a list of names (nodes, states, health values) as users give
    it, a list or a comma-separated string such as C(-e tpu_recover_nodes=pod-a,pod-b).
  - A string becomes the list of its parts, each trimmed, empty parts dropped (an empty string
    is an empty list). Anything else is returned as it is, so that the playbook's checks refuse
    what is not a list, with its value.
options:
  _input:
    description: The list, or a comma-separated string.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The nodes to recover
  ansible.builtin.debug:
    msg: "{{ tpu_recover_nodes | default([]) | cloudtpu.pod.name_list }}"
  # -e tpu_recover_nodes='pod-a, pod-b' gives ['pod-a', 'pod-b']
"""

RETURN = r"""
_value:
  description: The list of names, or the value as it was when it is not a string.
  type: raw
"""


class FilterModule:
    """cloudtpu.pod.name_list."""

    def filters(self) -> dict[str, Any]:
        return {"name_list": name_list}
