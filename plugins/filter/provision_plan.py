# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""How provision.yml asks for capacity: a queued resource or plain nodes."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued import provision_plan

DOCUMENTATION = r"""
name: provision_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Whether capacity is requested through a queued resource or as plain nodes
description:
  - With method V(auto), spot, guaranteed and flex-start capacity, and capacity from a
    reservation, are requested through a queued resource (the service queues the request and
    fulfils it when capacity is free); on-demand capacity is created as plain nodes.
  - V(node) and V(queued_resource) choose by name; V(node) cannot give guaranteed, flex-start
    or reserved capacity, which is reported as a problem.
positional: tier, reservation
options:
  _input:
    description: The method asked for (V(auto), V(node) or V(queued_resource)).
    type: str
    required: true
  tier:
    description: V(on_demand), V(spot), V(guaranteed) or V(flex_start).
    type: str
    required: true
  reservation:
    description: Reservation name, or empty.
    type: str
"""

EXAMPLES = r"""
- name: The method for spot capacity
  ansible.builtin.debug:
    msg: "{{ ('auto' | cloudtpu.pod.provision_plan('spot')).method }}"  # queued_resource
"""

RETURN = r"""
_value:
  description: C(method) (V(node) or V(queued_resource)), C(why) (a sentence) and C(problem)
    (a sentence, empty when the inputs work together).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.provision_plan."""

    def filters(self) -> dict[str, Any]:
        return {"provision_plan": provision_plan}
