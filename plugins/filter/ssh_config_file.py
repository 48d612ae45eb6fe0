# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""One SSH config file of playbooks/ssh_config.yml (module_utils/tpu_ssh_config_file.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_file import file_plan

DOCUMENTATION = r"""
name: ssh_config_file
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What one SSH config file of playbooks/ssh_config.yml gets
description:
  - Takes how Ansible reaches each worker (one entry per worker, C(host), C(hostname), C(user),
    C(port), C(worker_id), C(identity_file) and C(known_hosts), all text), the file's options
    and the play's, and returns what the file gets.
  - C(entries) are the workers' entries with the file's C(user), C(identity_file) and C(port),
    when set, in place of Ansible's.
  - C(problem) names each refused option (C(tpu_ssh_config_path), C(tpu_ssh_config_user),
    C(tpu_ssh_config_identity_file), C(tpu_ssh_config_proxy_jump), C(tpu_ssh_config_name),
    C(tpu_ssh_config_forwards), or a group without hosts) with its value and what is allowed.
  - C(entry_problems) maps each worker's inventory name to why its entry cannot be written.
  - C(block) has one C(Host) entry per worker (worker 0's with the port forwards), then
    C(Host *); empty while anything is refused. C(message) says how to connect.
positional: file, play
options:
  _input:
    description: The workers' entries.
    type: list
    elements: dict
    required: true
  file:
    description: The file's C(path), C(user), C(identity_file), C(proxy_jump), C(port) and
      C(forwards), as the filter C(cloudtpu.pod.ssh_config_targets) returns them.
    type: dict
    required: true
  play:
    description: The block's C(name), the inventory C(group) and its C(hosts), and the user's
      C(home) (a file other than its C(.ssh/config) is named with C(-F) in the message).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Plan the file
  ansible.builtin.set_fact:
    plan: "{{ entries | cloudtpu.pod.ssh_config_file(file, play) }}"
  vars:
    play: {name: pod, group: tpu, hosts: "{{ groups['tpu'] }}", home: /home/me}
"""

RETURN = r"""
_value:
  description: C(entries), C(problem) (text, empty when fine), C(entry_problems) (a dict of
    text), C(block) (the managed block) and C(message) (how to connect).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.ssh_config_file."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_file": file_plan}
