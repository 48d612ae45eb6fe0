# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Files on a worker that sync.yml removes with tpu_sync_delete=true."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.filter.sync_files import load_ignore

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


def sync_stale(remote: Iterable[str], src: str, files: Iterable[str]) -> list[str]:
    """Remote files the folder lost, leaving ignored ones and .git alone."""
    keep = set(files)
    ignore = load_ignore(src)
    stale = []
    for path in remote:
        path = str(path).strip()
        path = path[2:] if path.startswith("./") else path
        if not path or path in keep or ".." in path.split("/"):
            continue
        if ignore.ignored(path):
            continue
        stale.append(path)
    return sorted(set(stale))


class FilterModule:
    """The sync_stale filter."""

    def filters(self) -> dict[str, Any]:
        return {"sync_stale": sync_stale}
