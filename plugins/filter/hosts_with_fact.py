# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The play's hosts whose fact is set and true (module_utils/tpu_pod_wheels.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod_wheels import (
    hosts_with_fact as _hosts,
)

DOCUMENTATION = r"""
name: hosts_with_fact
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The play's hosts whose fact is set and true
description:
  - The hosts of the list, in its order, whose fact of the given name is set and true; a host
    that has not set it (it skipped the task, or failed before it) is left out. The python and
    framework roles use it for the workers that need installing (the pod's one download of
    wheels).
positional: _input, hostvars, fact
options:
  _input:
    description: The hosts, usually C(ansible_play_hosts).
    type: list
    elements: str
    required: true
  hostvars:
    description: The play's C(hostvars).
    type: dict
    required: true
  fact:
    description: The name of the fact.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The workers that need installing
  ansible.builtin.set_fact:
    needing: "{{ ansible_play_hosts | cloudtpu.pod.hosts_with_fact(hostvars, 'my_role__todo') }}"
"""

RETURN = r"""
_value:
  description: The hosts whose fact is set and true, in the order given.
  type: list
  elements: str
"""


def hosts_with_fact(hosts: list, *args: Any) -> list[str]:
    """cloudtpu.pod.hosts_with_fact."""
    try:
        return _hosts(hosts, *args)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.hosts_with_fact: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.hosts_with_fact."""

    def filters(self) -> dict[str, Any]:
        return {"hosts_with_fact": hosts_with_fact}
