# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The SSH config files playbooks/ssh_config.yml writes, with the options of each (the record's
shape: module_utils/tpu_ssh_config_record.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_record import (
    RecordError,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_record import (
    ssh_config_targets as targets,
)

DOCUMENTATION = r"""
name: ssh_config_targets
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The SSH config files playbooks/ssh_config.yml writes, with the options of each
description:
  - Reads the record of the files written per block name (C(tpu_ssh_config_record)), in its
    current shape (per name, C(files) maps each path to its options) or the earlier one (per
    name, the options of the one file written last).
  - Without I(refresh), one file, I(path) or else I(default_path), with the I(explicit) options.
  - With I(refresh), every file recorded for I(name), each with its recorded options; only
    I(path), else I(refresh_path), when one is given (with its recorded options, if any).
    None when nothing is recorded.
  - Explicit options win over recorded ones; an option given as C(None) is not given.
positional: name, refresh, path, refresh_path, default_path, explicit
options:
  _input:
    description: The record, as JSON text (empty for none) or a dict.
    type: raw
    required: true
  name:
    description: The block name (C(tpu_ssh_config_name), by default the inventory sources).
    type: str
    required: true
  refresh:
    description: Rewrite the recorded files rather than one file.
    type: bool
    default: false
  path:
    description: The explicit file (C(tpu_ssh_config_path)), C(None) when not given; C(~) is
      expanded.
    type: str
  refresh_path:
    description: On a refresh, the one file to rewrite (C(tpu_ssh_config_refresh_path)); empty
      for all of them.
    type: str
  default_path:
    description: The file when no path is given (the user's C(~/.ssh/config)).
    type: str
    default: ''
  explicit:
    description: The explicit options, C(user), C(identity_file), C(proxy_jump), C(port) and
      C(forwards) (a list, kept as given for the play to check), C(None) for those not given.
    type: dict
"""

EXAMPLES = r"""
- name: The files to refresh
  ansible.builtin.set_fact:
    files: >-
      {{ lookup('ansible.builtin.file', record, errors='ignore') | default('', true)
         | cloudtpu.pod.ssh_config_targets('inventories/gcp', refresh=true) }}
"""

RETURN = r"""
_value:
  description: One dict per file, with C(path), C(user), C(identity_file), C(proxy_jump) and
    C(port) (text, empty for the default) and C(forwards) (a list, empty for none).
  type: list
  elements: dict
"""


def ssh_config_targets(records: Any, name: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """The files to write and the options of each (see DOCUMENTATION; the arguments after
    ``name`` are those of module_utils' ssh_config_targets, in its order)."""
    try:
        return targets(records, name, *args, **kwargs)
    except RecordError as exc:
        raise AnsibleFilterError(str(exc)) from exc.__cause__


class FilterModule:
    """cloudtpu.pod.ssh_config_targets."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_targets": ssh_config_targets}
