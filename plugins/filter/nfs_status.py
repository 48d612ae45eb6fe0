# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the nfs role does on a worker and how it reports it (module_utils/tpu_nfs_status.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_nfs_status import (
    nfs_status as _nfs_status,
)

DOCUMENTATION = r"""
name: nfs_status
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Whether the nfs role starts the server and mounts now, and its two reports
description:
  - Takes the nfs role's view of the pod and what the worker's kernel can, with the role's
    switches and paths, and returns whether the server starts and the share mounts in this run
    and the sentences of the facts C(tpu_nfs_server_status) and C(tpu_nfs_mount_status).
  - C(auto) starts the kernel server only where the kernel has nfsd (ganesha always), and
    mounts only where the kernel can mount NFS; C(true) forces, C(false) never.
positional: _input, kernel
options:
  _input:
    description:
      - The role's view of the pod, keys C(server), C(is_server), C(server_address), C(clients).
    type: dict
    required: true
  kernel:
    description: What the kernel can, keys C(client) and C(server) (booleans).
    type: dict
    required: true
  mount:
    description: C(tpu_nfs_mount), auto, true or false.
    type: raw
    required: true
  server_start:
    description: C(tpu_nfs_server_start), auto, true or false.
    type: raw
    required: true
  backend:
    description: C(kernel) or C(ganesha).
    type: str
    required: true
  export_path:
    description: The server's exported folder.
    type: str
    required: true
  share_path:
    description: The path clients mount.
    type: str
    required: true
  mount_point:
    description: The mount point on every worker.
    type: str
    required: true
  external_server:
    description: An external server's address, or empty.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Report the mount
  ansible.builtin.debug:
    msg: >-
      {{ (plan | cloudtpu.pod.nfs_status({'client': true, 'server': true}, mount='auto',
          server_start='auto', backend='kernel', export_path='/srv/nfs/shared',
          share_path='/srv/nfs/shared', mount_point='/mnt/shared'))['mount_status'] }}
"""

RETURN = r"""
_value:
  description: C(mount_now), C(start_now), C(service), C(server_status) and C(mount_status).
  type: dict
"""


def nfs_status(plan: dict, kernel: dict, **options: Any) -> dict[str, Any]:
    """cloudtpu.pod.nfs_status."""
    try:
        return _nfs_status(plan, kernel, **options)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.nfs_status: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.nfs_status."""

    def filters(self) -> dict[str, Any]:
        return {"nfs_status": nfs_status}
