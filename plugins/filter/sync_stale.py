# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Files on a worker that sync.yml removes with tpu_sync_delete=true
(module_utils/tpu_sync_files.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_sync_files import sync_stale

DOCUMENTATION = r"""
name: sync_stale
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The files a worker has that the local folder no longer has
description:
  - Given the relative paths of the files under the destination on a worker and the local
    folder, returns those that the folder no longer has and that its C(.gitignore) files do
    not name. Ignored files (build outputs, checkpoints, data) and C(.git) stay on the worker,
    as with rsync's C(--delete) without C(--delete-excluded).
positional: _input, src, files
options:
  _input:
    description: Relative paths of the files under the destination on the worker.
    type: list
    elements: str
    required: true
  src:
    description: The local folder (absolute path on this machine).
    type: str
    required: true
  files:
    description: What C(cloudtpu.pod.sync_files) returned for I(src) (its C(files) list).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Files to remove on the worker
  ansible.builtin.set_fact:
    stale: >-
      {{ remote_files | cloudtpu.pod.sync_stale(src, (src | cloudtpu.pod.sync_files)['files']) }}
"""

RETURN = r"""
_value:
  description: Sorted relative paths to remove.
  type: list
  elements: str
"""


class FilterModule:
    """The sync_stale filter."""

    def filters(self) -> dict[str, Any]:
        return {"sync_stale": sync_stale}
