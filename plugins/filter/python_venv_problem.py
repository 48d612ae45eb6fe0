# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why the python role refuses the venv at its venv path (module_utils/tpu_python_venv.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_python_venv import venv_problem

DOCUMENTATION = r"""
name: python_venv_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why the python role refuses the venv already at its venv path
description:
  - Takes the Python of the venv already at the venv path (the C(python_venv_found) filter,
    empty without one), the wanted C(tpu_python_version) and the venv path, and returns why
    the role refuses it, or an empty string. The role never replaces a venv of another Python.
positional: _input, version, venv
options:
  _input:
    description: The venv's major.minor Python, C(unknown), or empty without a venv.
    type: str
    required: true
  version:
    description: The wanted Python (C(tpu_python_version)).
    type: str
    required: true
  venv:
    description: The venv path, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the venv already at the venv path
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
  vars:
    problem: "{{ venv_found | cloudtpu.pod.python_venv_problem(tpu_python_version, venv) }}"
"""

RETURN = r"""
_value:
  description: Why the venv does not fit and what to do, or an empty string.
  type: str
"""


def python_venv_problem(found: Any, version: Any, venv: Any) -> str:
    """cloudtpu.pod.python_venv_problem."""
    try:
        return venv_problem(found, version, venv)
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.python_venv_problem: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.python_venv_problem."""

    def filters(self) -> dict[str, Any]:
        return {"python_venv_problem": python_venv_problem}
