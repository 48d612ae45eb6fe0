# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The SSH config files playbooks/ssh_config.yml writes, with the options of each.

The record of the files written is a JSON object ``{name: {"files": {path: options}}}``, where
options are ``path``, ``user``, ``identity_file``, ``proxy_jump`` and ``port`` (text, '' for the
default) and ``forwards`` (the port forwards to worker 0 as given, a list; [] for none, also when a
record predates them). The earlier shape, one file per name (``{name: options}``), is still read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

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

OPTIONS = ("user", "identity_file", "proxy_jump", "port")
# Not text: the port forwards to worker 0, as given (a list once checked).
FORWARDS = "forwards"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _records(records: Any) -> dict[str, Any]:
    """The record as a dict: from its JSON text ('' or None for none) or a dict."""
    if records is None or (isinstance(records, str) and not records.strip()):
        return {}
    if isinstance(records, str):
        try:
            records = json.loads(records)
        except ValueError as exc:
            raise AnsibleFilterError(
                f"The record of written SSH config files (tpu_ssh_config_record) is not JSON: {exc}"
            ) from exc
    if not isinstance(records, Mapping):
        raise AnsibleFilterError(
            "The record of written SSH config files (tpu_ssh_config_record) must be a JSON object,"
            f" not {type(records).__name__}."
        )
    return dict(records)


def _entry(path: str, options: Mapping[str, Any]) -> dict[str, Any]:
    forwards = options.get(FORWARDS)
    return {
        "path": path,
        **{key: _text(options.get(key)) for key in OPTIONS},
        FORWARDS: [] if forwards is None or forwards == "" else forwards,
    }


def _files(block: Any) -> dict[str, dict[str, Any]]:
    """The files of one block name, {path: options}, from the old or the new shape."""
    if not isinstance(block, Mapping):
        return {}
    if isinstance(block.get("path"), str):  # old shape: the one file written last
        return {block["path"]: _entry(block["path"], block)} if block["path"] else {}
    files = block.get("files")
    if not isinstance(files, Mapping):
        return {}
    return {
        str(path): _entry(str(path), options)
        for path, options in files.items()
        if path and isinstance(options, Mapping)
    }


def ssh_config_targets(
    records: Any,
    name: str,
    refresh: Any = False,
    path: Any = None,
    refresh_path: Any = None,
    default_path: str = "",
    explicit: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The files to write and the options of each (see DOCUMENTATION)."""
    explicit = {key: value for key, value in (explicit or {}).items() if value is not None}
    given: dict[str, Any] = {key: _text(explicit[key]) for key in OPTIONS if key in explicit}
    if FORWARDS in explicit:
        given[FORWARDS] = explicit[FORWARDS]
    # An explicit path (even an empty one, which the play then refuses) is the one file.
    chosen = None if path is None else os.path.expanduser(_text(path))
    if not refresh:
        return [_entry(default_path if chosen is None else chosen, given)]
    files = _files(_records(records).get(name))
    if chosen is None and refresh_path:
        chosen = os.path.expanduser(_text(refresh_path))
    if chosen is not None:
        return [_entry(chosen, {**files.get(chosen, {}), **given})]
    return [_entry(file, {**options, **given}) for file, options in files.items()]


class FilterModule:
    """cloudtpu.pod.ssh_config_targets."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_targets": ssh_config_targets}
