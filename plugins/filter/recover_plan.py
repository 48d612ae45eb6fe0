# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What recover.yml does with each node it is given."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_recover import recover_plan

DOCUMENTATION = r"""
name: recover_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What recover.yml does with each node
description:
  - For each node (as M(cloudtpu.pod.tpu_node_info) returns it), one entry with C(action)
    V(recreate) (a lost plain node, created again from its spec), V(requeue) (a lost node a
    queued resource owns, whose request is deleted and created again with its spec),
    V(maintenance) (READY under a maintenance event, waited for, then bootstrapped) or
    V(rebootstrap) (READY with rebooted workers, bootstrapped), or a C(problem) saying why the
    node does not need recovering.
  - C(pull) is true when the node's startup-script is the collection's pull bootstrap
    (C(playbooks/provision.yml) with C(tpu_provision_bootstrap=pull)); its workers bootstrap
    themselves at every boot, and recover.yml waits for their result instead of bootstrapping
    them from the controller.
  - A node named in O(names) that the API does not know (it is not in the input) but O(journal)
    holds is V(recreate)d from the journal's spec, with C(journal) true (an earlier run
    deleted it and did not create it again). One that neither knows gets a C(problem).
positional: states, health, force, rebooted, journal, names
options:
  _input:
    description: Node summaries.
    type: list
    elements: dict
    required: true
  states:
    description: Node states that count as lost.
    type: list
    elements: str
    required: true
  health:
    description: Health values of a READY node that count as lost.
    type: list
    elements: str
    required: true
  force:
    description: Every node counts as lost.
    type: bool
    default: false
  rebooted:
    description: A READY HEALTHY node counts as back from maintenance with rebooted workers.
    type: bool
    default: false
  journal:
    description: The recovery journal's entries by node ID (M(cloudtpu.pod.tpu_journal)).
    type: dict
    default: {}
  names:
    description: The node IDs asked for, in order (default, the names of the input's nodes).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: The plan
  ansible.builtin.debug:
    msg: >-
      {{ nodes | cloudtpu.pod.recover_plan(['PREEMPTED'], ['TIMEOUT'])
         | map(attribute='action') | list }}
"""

RETURN = r"""
_value:
  description: One dict per node with C(name), C(action), C(queued_resource), C(problem),
    C(pull), C(journal) (recreated from the journal) and C(node) (the summary given, or one
    made of the journal's spec).
  type: list
  elements: dict
"""


class FilterModule:
    """cloudtpu.pod.recover_plan."""

    def filters(self) -> dict[str, Any]:
        return {"recover_plan": recover_plan}
