# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The apt packages of the remote_shell role, for the role and for a run's first apt step."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

DOCUMENTATION = r"""
name: remote_shell_packages
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The apt packages of the remote_shell role
description:
  - Returns C(locales), then C(mosh) and C(byobu) when they are asked for. The remote_shell role
    installs these; the bootstrap playbook hands them to C(cloudtpu.pod.apt_plan) so that a run's
    first apt step installs them ahead, in one transaction.
  - The switches are read as Ansible's C(bool) filter reads them (C(true), C(yes), C(on), C(1)).
positional: _input, byobu
options:
  _input:
    description: C(tpu_remote_shell_mosh).
    type: raw
    required: true
  byobu:
    description: C(tpu_remote_shell_byobu).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The role's packages
  ansible.builtin.debug:
    msg: "{{ tpu_remote_shell_mosh | cloudtpu.pod.remote_shell_packages(tpu_remote_shell_byobu) }}"
# true, true -> [locales, mosh, byobu]
"""

RETURN = r"""
_value:
  description: The packages, C(locales) first.
  type: list
  elements: str
"""


def remote_shell_packages(mosh: Any, byobu: Any) -> list[str]:
    """locales, plus mosh and byobu when switched on."""
    return (
        ["locales"]
        + (["mosh"] if boolean(mosh, strict=False) else [])
        + (["byobu"] if boolean(byobu, strict=False) else [])
    )


class FilterModule:
    """cloudtpu.pod.remote_shell_packages."""

    def filters(self) -> dict[str, Any]:
        return {"remote_shell_packages": remote_shell_packages}
