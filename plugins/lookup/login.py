# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The login user of a worker, and where their home, venv and run logs are."""

from __future__ import annotations

DOCUMENTATION = r"""
name: login
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: The login user of a worker, their home, venv and run-log folder
description:
  - The one place that decides who logs in to a TPU worker and where their files are. Every
    role and playbook of the collection reads these values from this lookup.
  - The user is C(tpu_login_user), else the connection user (C(ansible_user),
    C(ansible_ssh_user)), else the configured remote user (C(ANSIBLE_REMOTE_USER) or
    C(remote_user) in ansible.cfg), else the controller's own user. Gathered facts are never
    read, so a fact cache made under become cannot change the answer. A play's C(remote_user)
    keyword reaches this lookup as C(ansible_user), as Ansible's connection sees it.
  - The home is C(tpu_login_home), else C(/root) for root and C(/home/<user>) for others (TPU VM
    images create users there from the C(ssh-keys) metadata).
  - The venv is C(tpu_venv_path), else C(<home>/.venv<XY>) from C(tpu_python_version)
    (default C(3.10), so C(.venv310)). Run logs go to C(<home>/cloudtpu-runs).
options:
  _terms:
    description:
      - Keys to return, any of C(user), C(home), C(venv), C(runs_dir), C(source). Without keys
        the whole mapping is returned.
      - C(connection_user) is the user Ansible connects as (the same order without
        C(tpu_login_user)); it is returned only when asked for by name, never in the mapping.
    required: false
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Where the venv of the login user is
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.login', 'venv') }}"

- name: Everything at once
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.login') }}"
"""

RETURN = r"""
_raw:
  description:
    - The values of the keys asked for, or one mapping with user, home, venv, runs_dir and
      source (where the user came from).
  type: raw
"""

import getpass
from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_login import (
    CONNECTION_KEY,
    KEYS,
    LoginError,
    connection_user,
    resolve,
)

_INPUTS = (
    "tpu_login_user",
    "ansible_user",
    "ansible_ssh_user",
    "tpu_login_home",
    "tpu_venv_path",
    "tpu_python_version",
)


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list:
        variables = variables or {}
        values: dict[str, Any] = {}
        for key in _INPUTS:
            if key in variables:
                values[key] = self._templar.template(variables[key])
        unknown = [t for t in terms if t not in (*KEYS, CONNECTION_KEY)]
        if unknown:
            raise AnsibleError(
                f"cloudtpu.pod.login: unknown key(s) {unknown}; "
                f"use any of {[*KEYS, CONNECTION_KEY]}"
            )
        try:
            login = resolve(values, C.DEFAULT_REMOTE_USER, getpass.getuser)
            if CONNECTION_KEY in terms:
                login = {
                    **login,
                    CONNECTION_KEY: connection_user(values, C.DEFAULT_REMOTE_USER, getpass.getuser),
                }
        except LoginError as exc:
            raise AnsibleError(f"cloudtpu.pod.login: {exc}") from None
        if not terms:
            return [login]
        return [login[t] for t in terms]
