# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The boolean check of module_utils/tpu_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import boolean_problem

DOCUMENTATION = r"""
name: boolean_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why a value is not true or false for a variable ('' when it is)
description:
  - Checks that the input is a boolean as Ansible's C(bool) filter reads one strictly, a string
    from C(-e key=value) included (C(true), C(yes), C(on), C(1) and C(false), C(no), C(off), C(0),
    in any case).
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed. The playbooks' confirmations (C(tpu_teardown_confirm), C(tpu_expire_confirm))
    use it, so that a word they do not know stops the run instead of counting as no.
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
"""

EXAMPLES = r"""
- name: Check the confirmation
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_teardown_confirm | default(false)
         | cloudtpu.pod.boolean_problem('tpu_teardown_confirm') }}
"""

RETURN = r"""
_value:
  description: An empty string when the value is true or false, else the reason and what is
    allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.boolean_problem."""

    def filters(self) -> dict[str, Any]:
        return {"boolean_problem": boolean_problem}
