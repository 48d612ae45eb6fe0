# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The framework role's installer options (module_utils/tpu_framework_install.py) as a filter."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import installer

DOCUMENTATION = r"""
name: framework_installer
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The framework role's installer options and environment
description:
  - Takes the installer (C(uv) or C(pip)), the venv, the distribution and uv's path, with the
    index options, and returns what roles/framework/tasks/install.yml runs the installer with.
  - The index URLs can carry a token; the tasks that show the result are no_log then.
positional: _input, venv, dist, uv_bin
options:
  _input:
    description: The installer, C(uv) or C(pip).
    type: str
    required: true
  venv:
    description: The venv's folder.
    type: str
    required: true
  dist:
    description: The framework's distribution name (C(jax), C(torch_xla)).
    type: str
    required: true
  uv_bin:
    description: The uv command.
    type: str
    required: true
  index_url:
    description: The index URL, or empty.
    type: str
    default: ""
  extra_index_urls:
    description: More index URLs.
    type: list
    elements: str
    default: []
  find_links:
    description: Pages or folders with wheels.
    type: list
    elements: str
    default: []
  ca_bundle:
    description: A CA bundle on the worker, or empty for the system's.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Work out the installer
  ansible.builtin.set_fact:
    how: "{{ 'uv' | cloudtpu.pod.framework_installer(venv, 'jax', '/opt/cloudtpu/uv/bin/uv') }}"
"""

RETURN = r"""
_value:
  description:
    - C(name), C(python) (the venv's), C(index) and C(env) (the installer's), C(pip_index) and
      C(pip_env) (pip's, for the pod's wheel download), C(head) (the install command without its
      arguments) and C(newest) (the command that asks the index for the newest release).
  type: dict
"""


def framework_installer(name: str, venv: str, dist: str, uv_bin: str, **options: Any) -> dict:
    """cloudtpu.pod.framework_installer."""
    try:
        return installer(name, venv, dist, uv_bin, **options)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_installer: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_installer."""

    def filters(self) -> dict[str, Any]:
        return {"framework_installer": framework_installer}
