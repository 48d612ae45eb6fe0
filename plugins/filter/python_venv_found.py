# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The Python of a venv, from its pyvenv.cfg (module_utils/tpu_python_venv.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_python_venv import venv_version

DOCUMENTATION = r"""
name: python_venv_found
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The Python of a venv, from its pyvenv.cfg
description:
  - Takes the text of a venv's C(pyvenv.cfg) (none when there is no venv) and returns the
    major.minor Python it names (C(version) or C(version_info)).
positional: _input
options:
  _input:
    description: The text of C(pyvenv.cfg), or none.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The Python of the venv at the venv path
  ansible.builtin.set_fact:
    venv_found: "{{ probe['venv_cfg'] | cloudtpu.pod.python_venv_found }}"
"""

RETURN = r"""
_value:
  description: The major.minor version, C(unknown) when the file names none, empty without a venv.
  type: str
"""


def python_venv_found(cfg: Any) -> str:
    """cloudtpu.pod.python_venv_found."""
    try:
        return venv_version(cfg)
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.python_venv_found: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.python_venv_found."""

    def filters(self) -> dict[str, Any]:
        return {"python_venv_found": python_venv_found}
