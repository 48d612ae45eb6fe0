# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which files of a local folder playbooks/sync.yml copies: all but .git and the ignored
(module_utils/tpu_sync_files.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_sync_files import (
    sync_files as files_to_copy,
)

DOCUMENTATION = r"""
name: sync_files
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The files of a local folder to copy, without .git and ignored files
description:
  - Walks the folder and returns the relative paths of its files (and symbolic links), leaving
    out C(.git) and what the folder's C(.gitignore) files name, as git would.
  - Every C(.gitignore) counts, from the folder down; its rules apply below its own folder.
    Supported are comments, blank lines, C(!) negation, a trailing C(/) for folders only, a
    leading or inner C(/) to anchor a pattern, and C(*), C(?), C([...]) and C(**) globs. As in
    git, a file inside an ignored folder cannot be brought back by a negation.
  - The answer does not depend on git being installed or on the folder being a repository.
positional: _input
options:
  _input:
    description: The folder, an absolute path on this machine.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: What sync.yml copies
  ansible.builtin.set_fact:
    files: "{{ '/home/me/proj' | cloudtpu.pod.sync_files }}"
# {"files": ["README.md", "train.py", ".gitignore"], "ignored": 3}
"""

RETURN = r"""
_value:
  description: C(files) (sorted relative paths) and C(ignored) (how many entries were left out,
    C(.git) included).
  type: dict
"""


def sync_files(src: str) -> dict[str, Any]:
    """The relative paths to copy from ``src``, and how many entries were left out."""
    try:
        return files_to_copy(src)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """The sync_files filter."""

    def filters(self) -> dict[str, Any]:
        return {"sync_files": sync_files}
