# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The Google Cloud project and zone check of module_utils/tpu_name_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import gcp_name_problem

DOCUMENTATION = r"""
name: gcp_name_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why a value is not a Google Cloud project ID or zone ('' when it is)
description:
  - A project ID is 6 to 30 lowercase letters, digits and hyphens, starting with a letter and
    not ending with a hyphen (C(my-project)); a zone is a region and a letter
    (C(us-central2-b)); a node ID is 1 to 63 lowercase letters, digits and hyphens, starting
    with a letter and not ending with a hyphen (C(pod-a)). These are the names the TPU API takes
    in its paths, so a value such as C(../x) never reaches it.
  - With O(many), the input is a list of them or a comma-separated string (as C(-e key=value)
    gives), and may be empty.
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name, kind, many
options:
  _input:
    description: The value to check (any type; a wrong type is refused).
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
  kind:
    description: What the value is.
    type: str
    choices: [project, zone, node]
    default: project
  many:
    description: A list (or a comma-separated string) of them rather than one.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check the zones asked for
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_status_zones | cloudtpu.pod.gcp_name_problem('tpu_status_zones', 'zone',
                                                          many=true) }}
"""

RETURN = r"""
_value:
  description: An empty string when the value is acceptable, else the reason and what is allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.gcp_name_problem."""

    def filters(self) -> dict[str, Any]:
        return {"gcp_name_problem": gcp_name_problem}
