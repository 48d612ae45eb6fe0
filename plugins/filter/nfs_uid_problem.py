# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether tpu_nfs_owner has the same uid on a worker as across its NFS share
(module_utils/tpu_nfs_status.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_nfs_status import (
    owner_uid_problem,
)

DOCUMENTATION = r"""
name: nfs_uid_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why the nfs role's share would not be writable for tpu_nfs_owner, or ''
description:
  - NFS matches users by uid. On a client, compares the owner's uid with the server's, when the
    server is in the play. The server's uid is in its record's notes when it took the fast path
    (its C(tpu_nfs__seen) converged), else the uid its lookup found (C(getent_passwd)).
  - On the server, names the workers of the play whose record's notes (C(tpu_nfs__seen)) say
    that this host is their server and hold another uid, in the order of O(play_hosts).
  - Returns the sentence the role fails with, or an empty string.
positional: owner, host, server, hostvars, play_hosts
options:
  _input:
    description: The owner's uid on this worker.
    type: str
    required: true
  owner:
    description: C(tpu_nfs_owner).
    type: str
    required: true
  host:
    description: This worker (C(inventory_hostname)).
    type: str
    required: true
  server:
    description: This worker's NFS server (in the inventory).
    type: str
    required: true
  hostvars:
    description: C(hostvars), read for the hosts of O(play_hosts) only.
    type: dict
    required: true
  play_hosts:
    description: C(ansible_play_hosts).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Check that tpu_nfs_owner has the same uid here as on the server
  ansible.builtin.assert:
    that: _problem == ''
    fail_msg: "{{ _problem }}"
  vars:
    _problem: >-
      {{ tpu_nfs__uid_here | cloudtpu.pod.nfs_uid_problem(tpu_nfs_owner, inventory_hostname,
         tpu_nfs__server, hostvars, ansible_play_hosts) }}
"""

RETURN = r"""
_value:
  description: The sentence, or an empty string when the uids agree.
  type: str
"""


def _get(found: Any, key: str, default: Any = None) -> Any:
    """``found[key]`` of a mapping (hostvars of a host, a record), else ``default``."""
    return found[key] if isinstance(found, Mapping) and key in found else default


def _server_uid(server_vars: Mapping[str, Any], owner: str) -> Any:
    """The server's uid: in its record's notes on the fast path, else its lookup's."""
    seen = server_vars["tpu_nfs__seen"]
    if seen["converged"]:
        return seen["notes"]["owner_uid"]
    return server_vars["ansible_facts"]["getent_passwd"][owner][1]


def _others(hostvars: Mapping[str, Any], play_hosts: Iterable[str], host: str, uid: Any) -> list:
    """The workers whose notes name ``host`` as their server and hold another uid."""
    others = []
    for name in play_hosts:
        notes = _get(_get(hostvars[name], "tpu_nfs__seen"), "notes")
        if _get(notes, "server") == host and str(_get(notes, "owner_uid")) != str(uid):
            others.append(str(name))
    return others


def nfs_uid_problem(
    uid: Any,
    owner: str,
    host: str,
    server: str,
    hostvars: Mapping[str, Any],
    play_hosts: Iterable[str],
) -> str:
    """cloudtpu.pod.nfs_uid_problem."""
    play_hosts = list(play_hosts or [])
    try:
        if host == server:
            return owner_uid_problem(
                owner, uid, host, server, others=_others(hostvars, play_hosts, host, uid)
            )
        server_uid = _server_uid(hostvars[server], owner) if server in play_hosts else None
        return owner_uid_problem(owner, uid, host, server, server_uid=server_uid)
    except (KeyError, IndexError, TypeError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.nfs_uid_problem: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.nfs_uid_problem."""

    def filters(self) -> dict[str, Any]:
        return {"nfs_uid_problem": nfs_uid_problem}
