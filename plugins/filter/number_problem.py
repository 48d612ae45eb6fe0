# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The number check of module_utils/tpu_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import number_problem

DOCUMENTATION = r"""
name: number_problem
author: cloudtpu.pod maintainers
version_added: 0.1.0
short_description: Why a number is not acceptable for a variable ('' when it is)
description:
  - Checks that the input is a number, or a string that reads as one (as C(-e key=value)
    gives), within the bounds. Booleans are refused, and so is a string of more than 64
    characters (Python does not convert one of more than 4300 digits); a long value is shown
    shortened in the message.
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name
options:
  _input:
    description: The value to check.
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
  minimum:
    description: The smallest value allowed.
    type: float
  maximum:
    description: The largest value allowed.
    type: float
  integer:
    description: Only whole numbers (C(5), C("5")); with false, C(0.5) and C("0.5") pass too.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the grace period
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_libtpu_kill_grace | cloudtpu.pod.number_problem('tpu_libtpu_kill_grace',
                                                             minimum=0, maximum=3600) }}
"""

RETURN = r"""
_value:
  description: An empty string when the number is acceptable, else the reason and what is allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.number_problem."""

    def filters(self) -> dict[str, Any]:
        return {"number_problem": number_problem}
