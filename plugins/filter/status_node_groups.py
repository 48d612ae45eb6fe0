# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The inventory groups of TPU nodes, from their node IDs."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_hosts import group_name

DOCUMENTATION = r"""
name: status_node_groups
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The tpu_node_<node> inventory groups of some node IDs
description:
  - The C(cloudtpu.pod.tpu_vm) inventory puts every worker of node C(pod-a) in group
    C(tpu_node_pod_a) (characters other than letters, digits and C(_) become C(_)). This
    filter gives those group names for a list of node IDs, or a comma-separated string of them
    (as C(-e tpu_recover_nodes=pod-a,pod-b) gives), in the same order, without blanks.
positional: _input
options:
  _input:
    description: Node IDs, a list or a comma-separated string.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The groups of the recovered nodes
  ansible.builtin.debug:
    msg: "{{ 'pod-a,pod-b' | cloudtpu.pod.status_node_groups }}"  # [tpu_node_pod_a, tpu_node_pod_b]
"""

RETURN = r"""
_value:
  description: Group names.
  type: list
  elements: str
"""


def status_node_groups(nodes: Any) -> list[str]:
    """``tpu_node_<node>`` for each node ID."""
    if nodes is None:
        return []
    items = nodes.split(",") if isinstance(nodes, str) else list(nodes)
    names = [str(n).strip() for n in items]
    return [group_name("tpu_node_", n) for n in names if n]


class FilterModule:
    """cloudtpu.pod.status_node_groups."""

    def filters(self) -> dict[str, Any]:
        return {"status_node_groups": status_node_groups}
