# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The check of tpu_ssh_config_forwards (module_utils/tpu_ssh_forwards.py) as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_forwards import (
    forwards_problem,
)

DOCUMENTATION = r"""
name: ssh_config_forwards_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why port forwards for worker 0 cannot be written ('' when they can)
description:
  - Checks a list of port forwards for the coordinator (worker 0) of each pod, as
    playbooks/ssh_config.yml takes them in C(tpu_ssh_config_forwards).
  - Each item is a known service name (C(jupyter) = 8888, C(tensorboard) = 6006, C(profiler) =
    9012) or a mapping of the ports C(local) and C(remote) and an optional C(host) (default
    C(localhost)). Ports are whole numbers from 1 to 65535 and no local port comes twice; the
    host is one host name or IP address. An empty list, C(None) or C('') is no forward.
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name
options:
  _input:
    description: The forwards to check.
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    default: tpu_ssh_config_forwards
"""

EXAMPLES = r"""
- name: Check the forwards
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: "{{ forwards | cloudtpu.pod.ssh_config_forwards_problem }}"
    forwards: "{{ tpu_ssh_config_forwards | default([]) }}"
"""

RETURN = r"""
_value:
  description: An empty string, or the reason the value is refused.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.ssh_config_forwards_problem."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_forwards_problem": forwards_problem}
