# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Who takes part in the pod's one download of wheels (module_utils/tpu_pod_wheels.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod_wheels import (
    pod_wheels_plan as _plan,
)

DOCUMENTATION = r"""
name: pod_wheels_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Who takes part in the pod's one download of wheels, and the server's command
description:
  - For the python role's entry point C(pod_wheels). The pod's coordinator downloads and serves
    the wheels only when it is in the play, has systemd and an internal address, and two or
    more hosts of its pod need them; a host takes part when it is the coordinator or needs
    them.
  - The server is a transient systemd unit (a dynamic user, read-only system, at most 900
    seconds) bound to the coordinator's internal address that answers only the pod's own
    addresses.
positional: _input, host, play_hosts, needing, service_mgr, wheels_dir, port, unit
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
  needing:
    description: The play's hosts that need installing.
    type: list
    elements: str
    required: true
  service_mgr:
    description: The coordinator's service manager (its gathered fact), or empty.
    type: str
    required: true
  wheels_dir:
    description: The scratch folder of the wheels.
    type: str
    required: true
  port:
    description: The server's port.
    type: int
    required: true
  unit:
    description: The server's transient systemd unit.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    plan: >-
      {{ lookup('cloudtpu.pod.pod') | cloudtpu.pod.pod_wheels_plan(inventory_hostname,
         ansible_play_hosts, needing, 'systemd', '/var/cache/cloudtpu/wheels', 8479, 'w.service') }}
"""

RETURN = r"""
_value:
  description:
    - C(coordinator), C(is_coordinator), C(used) (this host takes part), C(address) (the
      coordinator's), C(members) (the pod's addresses), C(url) and C(serve) (the command line).
  type: dict
"""


def pod_wheels_plan(pod: dict, *args: Any) -> dict[str, Any]:
    """cloudtpu.pod.pod_wheels_plan."""
    try:
        return _plan(pod, *args)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.pod_wheels_plan: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.pod_wheels_plan."""

    def filters(self) -> dict[str, Any]:
        return {"pod_wheels_plan": pod_wheels_plan}
