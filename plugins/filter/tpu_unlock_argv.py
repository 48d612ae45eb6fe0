# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""tpu-unlock's command line for the libtpu role's options (module_utils/tpu_unlock_call.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_unlock_call import unlock_argv

DOCUMENTATION = r"""
name: tpu_unlock_argv
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: tpu-unlock's command line for the libtpu role's options
description:
  - Returns the command line of C(/usr/local/bin/tpu-unlock --json) for the device glob, the
    log folder, the lock files, and the switches (keep the logs, kill stale holders of these
    users after a grace period, a dry run in check mode). The role checked the values in its
    preflight.
positional: _input, log_dir, lock_files
options:
  _input:
    description: The glob of the TPU device files.
    type: str
    required: true
  log_dir:
    description: libtpu's log folder.
    type: str
    required: true
  lock_files:
    description: The lock files.
    type: list
    elements: str
    required: true
  remove_logs:
    description: Remove the logs of a stale run (else C(--keep-logs)).
    type: bool
    default: true
  kill:
    description: Kill stale holders of the TPU.
    type: bool
    default: false
  kill_grace:
    description: Seconds between SIGTERM and SIGKILL.
    type: int
    default: 10
  kill_users:
    description: Only holders of these users (names or uids).
    type: list
    elements: str
    default: []
  check_mode:
    description: Add C(--dry-run).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Run tpu-unlock
  ansible.builtin.command:
    argv: "{{ '/dev/accel*' | cloudtpu.pod.tpu_unlock_argv(log_dir, ['/tmp/libtpu_lockfile']) }}"
"""

RETURN = r"""
_value:
  description: The command line.
  type: list
  elements: str
"""


def tpu_unlock_argv(device_glob: str, log_dir: str, lock_files: list, **options: Any) -> list:
    """cloudtpu.pod.tpu_unlock_argv."""
    try:
        return unlock_argv(device_glob, log_dir, lock_files, **options)
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.tpu_unlock_argv: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.tpu_unlock_argv."""

    def filters(self) -> dict[str, Any]:
        return {"tpu_unlock_argv": tpu_unlock_argv}
