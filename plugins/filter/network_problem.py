# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The network (CIDR) check of module_utils/tpu_network_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import network_problem

DOCUMENTATION = r"""
name: network_problem
author: cloudtpu.pod maintainers
version_added: 0.1.0
short_description: Why a CIDR list is not acceptable for a variable ('' when it is)
description:
  - Checks that the input is a network in CIDR form or a list of them, IPv4 or IPv6, without
    host bits set (C(10.0.0.1/8) is refused and the message names C(10.0.0.0/8)).
  - A set open to the world only passes with O(allow_world) true. Open to the world is a set
    whose ranges together cover every IPv4 address (C(0.0.0.0/0), two C(/1)s, ...) or every
    IPv6 address (C(::/0) or its pieces), or more than half of the IPv4 internet or of the IPv6
    one (C(2000::/3)); and any one IPv4 range broader than a C(/8) (C(128.0.0.0/1) is half the
    internet; C(10.0.0.0/8) passes), or IPv6 range broader than a C(/32) that reaches
    C(2000::/3) (a C(/32) is what a registry gives one provider; C(fd00::/8) and
    C(fe80::/10) are not the internet and pass).
  - An IPv4-mapped IPv6 range (in C(::ffff:0:0/96)) counts as the IPv4 range it maps.
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name
options:
  _input:
    description: A CIDR string or a list of them.
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
  allow_world:
    description: Let a set open to the world pass (a boolean, or a string as C(-e) gives).
    type: raw
    default: false
  world_flag:
    description: The name of the variable that allows the world, named in the message.
    type: str
    default: ""
  allow_empty:
    description: Let an empty list pass.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check the NFS clients
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_nfs_clients | cloudtpu.pod.network_problem('tpu_nfs_clients',
           allow_world=tpu_nfs_allow_world, world_flag='tpu_nfs_allow_world') }}
"""

RETURN = r"""
_value:
  description: >-
    An empty string when the networks are acceptable, else the reason and what is allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.network_problem."""

    def filters(self) -> dict[str, Any]:
        return {"network_problem": network_problem}
