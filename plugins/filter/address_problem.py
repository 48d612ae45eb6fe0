# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The IP address check of module_utils/tpu_network_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import address_problem

DOCUMENTATION = r"""
name: address_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why a list of IP addresses is not acceptable for a variable ('' when it is)
description:
  - Checks that the input is a non-empty list (or one string) of single IPv4 or IPv6 addresses,
    each matched whole (no networks, no scope ids, no surrounding spaces or newlines).
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name
options:
  _input:
    description: The addresses to check.
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the addresses that reach /etc/hosts.allow
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: "{{ lookup('cloudtpu.pod.pod', 'ips') | cloudtpu.pod.address_problem('tpu_pod_ips') }}"
"""

RETURN = r"""
_value:
  description: An empty string, or the reason the value is refused.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.address_problem."""

    def filters(self) -> dict[str, Any]:
        return {"address_problem": address_problem}
