# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether playbooks/babysit.yml deletes the run's nodes when it stops watching
(tpu_babysit_teardown)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_babysit import teardown_plan

DOCUMENTATION = r"""
name: babysit_teardown
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Whether playbooks/babysit.yml deletes the run's nodes at its end
description:
  - C(never) keeps the nodes. C(on_success) deletes them when the watch ended because the run
    completed with exit code 0 on every worker (C(action) C(done)). C(always) deletes them
    whenever the watch ended (C(done), C(failed), C(give_up), C(timeout)).
  - A babysit run that used every round while the run still goes (C(over) false) keeps the
    nodes whatever the policy, since the run is alive and babysit.yml run again goes on watching it.
  - The policy is checked by C(cloudtpu.pod.babysit_options) first; an unknown one is an error.
positional: policy
options:
  _input:
    description: babysit.yml's C(_tpu_babysit) facts, of which C(action), C(over), C(nodes) (node
      to zone) and C(project) are read.
    type: dict
    required: true
  policy:
    description: The value of tpu_babysit_teardown, C(never), C(on_success) or C(always).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide whether to delete the nodes
  ansible.builtin.set_fact:
    plan: "{{ _tpu_babysit | cloudtpu.pod.babysit_teardown(_tpu_babysit_options['teardown']) }}"
"""

RETURN = r"""
_value:
  description: C(delete) (bool), C(nodes) (node to zone, empty unless C(delete)), C(project) and
    C(note) (which nodes are deleted, for the log and the report; empty when none is).
  type: dict
"""


def babysit_teardown(babysit: Mapping[str, Any], policy: str) -> dict[str, Any]:
    """The nodes babysit.yml deletes now, if any."""
    return teardown_plan(babysit, policy)


class FilterModule:
    """cloudtpu.pod.babysit_teardown."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_teardown": babysit_teardown}
