# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The record of playbooks/ssh_config.yml after it wrote some files (its shape:
module_utils/tpu_ssh_config_record.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_record import (
    RecordError,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_record import (
    ssh_config_record as record,
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
    try:
        return record(records, name, written)
    except RecordError as exc:
        raise AnsibleFilterError(str(exc)) from exc.__cause__


class FilterModule:
    """cloudtpu.pod.ssh_config_record."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_record": ssh_config_record}
