# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The metadata provision.yml creates nodes with (module_utils/tpu_resources.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import node_metadata

DOCUMENTATION = r"""
name: node_metadata
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The metadata new TPU nodes get, with the login user's SSH key
description:
  - Takes the user's own node metadata (C(tpu_provision_metadata)) and returns it with the line
    C(user:key) added to its C(ssh-keys) (each line trimmed, empty lines dropped, each line
    once), so that the login user can reach the workers over SSH. Without a key, C(ssh-keys) is
    left as it is.
  - With a startup script (the pull bootstrap's), it becomes the C(startup-script) key.
positional: user, key, startup_script
options:
  _input:
    description: The user's own metadata.
    type: dict
    required: true
  user:
    description: The login user the key is for.
    type: str
    required: true
  key:
    description: One OpenSSH public key line, or empty for none.
    type: str
    required: true
  startup_script:
    description: The node's startup script, or empty for none.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: The metadata with my key
  ansible.builtin.debug:
    msg: "{{ mine | cloudtpu.pod.node_metadata('tpu', 'ssh-ed25519 BBBB me') }}"
  vars:
    mine: {ssh-keys: "bob:ssh-ed25519 AAAA bob"}
  # {'ssh-keys': 'bob:ssh-ed25519 AAAA bob\ntpu:ssh-ed25519 BBBB me'}
"""

RETURN = r"""
_value:
  description: The metadata, a mapping of text.
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.node_metadata."""

    def filters(self) -> dict[str, Any]:
        return {"node_metadata": node_metadata}
