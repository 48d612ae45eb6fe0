# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The checks and rule set of playbooks/firewall.yml (module_utils/tpu_firewall.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_firewall import firewall_plan

DOCUMENTATION = r"""
name: firewall_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The checks and VPC firewall rules of playbooks/firewall.yml
description:
  - Takes the play's settings and returns why they are refused, if they are, and the rules that
    the task with C(google.cloud.gcp_compute_firewall) sends.
  - C(ranges_problem) is about C(tpu_firewall_source_ranges) (required, a list of CIDRs; the whole
    internet, or a range broader than an IPv4 /8 or an IPv6 /32, only with
    C(tpu_firewall_allow_world)); C(problem) about the other settings, each named with its value
    and what is allowed. Both are empty when fine.
  - C(rules) has one rule per service (SSH over TCP, mosh over UDP) and address family, since a
    VPC firewall rule holds either IPv4 or IPv6 source ranges; empty while anything is refused.
options:
  _input:
    description: The settings C(source_ranges), C(allow_world), C(target_tags), C(network),
      C(name_prefix), C(ssh), C(ssh_port), C(mosh), C(mosh_ports), C(priority) and C(state),
      the switches already checked to be booleans.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The rules for SSH from one address
  ansible.builtin.debug:
    msg: "{{ settings | cloudtpu.pod.firewall_plan }}"
  vars:
    settings:
      source_ranges: [203.0.113.7/32]
      target_tags: [tpu]
      network: default
      name_prefix: cloudtpu-pod
      ssh: true
      ssh_port: 22
      mosh: false
      mosh_ports: 60000-61000
      priority: 1000
      state: present
"""

RETURN = r"""
_value:
  description: C(ranges_problem) and C(problem) (text, empty when fine) and C(rules) (a list of
    dicts with C(name), C(description), C(network), C(direction), C(priority), C(allowed),
    C(source_ranges) and C(target_tags)).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.firewall_plan."""

    def filters(self) -> dict[str, Any]:
        return {"firewall_plan": firewall_plan}
