# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether the pod's coordinator goes through a role's tasks to serve the pod's wheels
(module_utils/tpu_pod_wheels.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod_wheels import (
    pod_cache_serves as _serves,
)

DOCUMENTATION = r"""
name: pod_cache_serves
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Whether this host serves its pod's wheels, converged or not
description:
  - For the python and framework roles' pod caches (the python role's entry point
    C(pod_wheels)). True when this host is its pod's coordinator and two or more hosts of the
    pod in the play go through the role's tasks (their converged fact does not say
    C(converged)). The coordinator then goes through them too, converged or not, to fetch the
    wheels once and serve them to the others.
positional: _input, host, play_hosts, hostvars, seen
options:
  _input:
    description: The pod contract (the C(cloudtpu.pod.pod) lookup).
    type: dict
    required: true
  host:
    description: This host's inventory name.
    type: str
    required: true
  play_hosts:
    description: The play's hosts.
    type: list
    elements: str
    required: true
  hostvars:
    description: The play's C(hostvars).
    type: dict
    required: true
  seen:
    description: The name of the role's fact of the converged fast path (C(cloudtpu.pod.tpu_state)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    serves: >-
      {{ lookup('cloudtpu.pod.pod') | cloudtpu.pod.pod_cache_serves(inventory_hostname,
         ansible_play_hosts, hostvars, 'my_role__seen') }}
"""

RETURN = r"""
_value:
  description: Whether this host is the coordinator that serves its pod's wheels.
  type: bool
"""


def pod_cache_serves(pod: dict, *args: Any) -> bool:
    """cloudtpu.pod.pod_cache_serves."""
    try:
        return _serves(pod, *args)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.pod_cache_serves: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.pod_cache_serves."""

    def filters(self) -> dict[str, Any]:
        return {"pod_cache_serves": pod_cache_serves}
