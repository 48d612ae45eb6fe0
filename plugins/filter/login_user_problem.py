# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why a worker's passwd entry does not fit the login contract (module_utils/tpu_login.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_login import (
    login_user_problem as _problem,
)

DOCUMENTATION = r"""
name: login_user_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why a worker's passwd entry does not fit the login contract
description:
  - Takes the login contract (the C(cloudtpu.pod.login) lookup), the worker's inventory name
    and its passwd entry of the login user, and returns why they do not fit, or an empty
    string. The worker must have the user and, with O(home), give it the contract's home
    (trailing slashes aside).
positional: _input, host, entry
options:
  _input:
    description: The login contract (C(user), C(home), C(source)).
    type: dict
    required: true
  host:
    description: The worker's inventory name, for the message.
    type: str
    required: true
  entry:
    description: The worker's passwd entry of the login user (seven fields), or none without one.
    type: list
    required: true
  home:
    description: Whether the entry's home must be the contract's.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check that the login user exists with its home
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
  vars:
    problem: "{{ login | cloudtpu.pod.login_user_problem(inventory_hostname, entry) }}"
"""

RETURN = r"""
_value:
  description: What does not fit and how to set it right, or an empty string.
  type: str
"""


def login_user_problem(login: dict, host: str, entry: Any, home: Any = True) -> str:
    """cloudtpu.pod.login_user_problem."""
    try:
        return _problem(login, host, entry, home=bool(home))
    except (IndexError, KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.login_user_problem: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.login_user_problem."""

    def filters(self) -> dict[str, Any]:
        return {"login_user_problem": login_user_problem}
