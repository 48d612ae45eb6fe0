# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why the framework role cannot install on a worker (module_utils/tpu_framework_install.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import (
    host_problem,
)

DOCUMENTATION = r"""
name: framework_host_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why the framework role cannot install into the venv on a worker
description:
  - Takes the framework role's look at the host (C(passwd), the login user's passwd entry or
    none; C(python) and C(uv), whether the venv's python and the uv binary exist), the login
    contract, the worker's inventory name and C(tpu_framework_uv_bin), and returns why the
    role cannot install, or an empty string. A missing user comes first, then a missing venv,
    then a missing uv.
positional: _input, login, host, uv_bin
options:
  _input:
    description: The look at the host (C(passwd), C(python), C(uv)).
    type: dict
    required: true
  login:
    description: The login contract (the C(cloudtpu.pod.login) lookup).
    type: dict
    required: true
  host:
    description: The worker's inventory name, for the message.
    type: str
    required: true
  uv_bin:
    description: The uv binary (C(tpu_framework_uv_bin)), for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check that the venv owner, the venv and the installer are there
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
  vars:
    problem: "{{ found | cloudtpu.pod.framework_host_problem(login, inventory_hostname, uv_bin) }}"
"""

RETURN = r"""
_value:
  description: What is missing and what to do, or an empty string.
  type: str
"""


def framework_host_problem(found: dict, *args: Any) -> str:
    """cloudtpu.pod.framework_host_problem."""
    try:
        return host_problem(found, *args)
    except (IndexError, KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_host_problem: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_host_problem."""

    def filters(self) -> dict[str, Any]:
        return {"framework_host_problem": framework_host_problem}
