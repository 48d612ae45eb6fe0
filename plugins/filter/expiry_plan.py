# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which nodes have lived past their lifetime, for playbooks/expire.yml."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_lifetime import expiry_plan

DOCUMENTATION = r"""
name: expiry_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The nodes past their lifetime
description:
  - For nodes as M(cloudtpu.pod.tpu_node_info) returns them, those with the label
    C(cloudtpu-lifetime) (C(tpu_provision_lifetime) of C(playbooks/provision.yml)) whose
    creation time plus that lifetime has passed.
  - Gives C(expired), project to a mapping of node ID to zone; C(count), how many; and
    C(lines), one sentence per labelled node saying when it expires or expired (or why its label
    is not understood, the node then kept).
positional: _input, now
options:
  _input:
    description: Node summaries.
    type: list
    elements: dict
    required: true
  now:
    description: The time to compare with, in seconds since 1970 (UTC).
    type: float
    required: true
"""

EXAMPLES = r"""
- name: The nodes past their lifetime
  ansible.builtin.debug:
    msg: "{{ (nodes | cloudtpu.pod.expiry_plan(now(utc=true).timestamp()))['lines'] }}"
"""

RETURN = r"""
_value:
  description: C(expired) (dict), C(count) (int) and C(lines) (list of str).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.expiry_plan."""

    def filters(self) -> dict[str, Any]:
        return {"expiry_plan": expiry_plan}
