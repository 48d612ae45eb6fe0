# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The record of playbooks/ssh_config.yml after it wrote some files (its shape:
ssh_config_targets.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.filter.ssh_config_targets import (
    _entry,
    _files,
    _records,
    _text,
)

DOCUMENTATION = r"""
name: ssh_config_record
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The record of playbooks/ssh_config.yml after it wrote some files
description:
  - Adds the files written, or replaces their entries (by path), under the block name, where
    C(files) maps each path to its options. A name recorded in the earlier shape (the options
    of one file) keeps that file. Other names are left as they are.
positional: name, written
options:
  _input:
    description: The record, as JSON text (empty for none) or a dict.
    type: raw
    required: true
  name:
    description: The block name.
    type: str
    required: true
  written:
    description: The files written, as the filter C(cloudtpu.pod.ssh_config_targets) returns them.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Record the files written
  ansible.builtin.copy:
    dest: "{{ record }}"
    content: "{{ record_text | cloudtpu.pod.ssh_config_record(name, files) | to_nice_json }}"
    mode: "0600"
"""

RETURN = r"""
_value:
  description: The whole record, to write back as JSON.
  type: dict
"""


def ssh_config_record(
    records: Any, name: str, written: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The record with the written files added or replaced under name (see DOCUMENTATION);
    other names are kept as they are."""
    result = _records(records)
    files = _files(result.get(name))
    for options in written or []:
        file = _text(options.get("path"))
        if file:
            files[file] = _entry(file, options)
    result[name] = {"files": files}
    return result


class FilterModule:
    """cloudtpu.pod.ssh_config_record."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_record": ssh_config_record}
