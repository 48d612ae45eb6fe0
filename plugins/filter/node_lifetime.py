# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A node's lifetime as provision.yml takes it (module_utils/tpu_lifetime.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_lifetime import node_lifetime

DOCUMENTATION = r"""
name: node_lifetime
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The check and the label of a node's lifetime
description:
  - C(playbooks/provision.yml) labels each node with the lifetime asked for
    (C(tpu_provision_lifetime)), label C(cloudtpu-lifetime), and C(playbooks/expire.yml)
    deletes the nodes that have lived longer, counted from their creation time.
  - Gives C(problem), an empty string or one sentence naming the variable, the value and what is
    allowed (a whole number and a unit, s, m, h or d, up to 366 days), and C(labels), the label
    to add to the node's own, empty when no lifetime is asked for or the value is refused.
positional: _input, name
options:
  _input:
    description: The lifetime, such as V(8h); none or an empty string for none.
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    default: tpu_provision_lifetime
"""

EXAMPLES = r"""
- name: Labels of a node that lives eight hours
  ansible.builtin.debug:
    msg: "{{ ('8h' | cloudtpu.pod.node_lifetime)['labels'] }}"  # {"cloudtpu-lifetime": "8h"}
"""

RETURN = r"""
_value:
  description: C(problem) (str) and C(labels) (dict).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.node_lifetime."""

    def filters(self) -> dict[str, Any]:
        return {"node_lifetime": node_lifetime}
