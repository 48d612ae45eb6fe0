# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The record of playbooks/ssh_config.yml: which SSH config files it wrote per block name, with
their options, which of them a run writes, and the record after it (documentation:
ssh_config_targets.yml and ssh_config_record.yml).

The record is a JSON object ``{name: {"files": {path: options}}}``, where options are
``path``, ``user``, ``identity_file``, ``proxy_jump`` and ``port`` (text, '' for the default).
The earlier shape, one file per name (``{name: options}``), is still read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

OPTIONS = ("user", "identity_file", "proxy_jump", "port")


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


def _entry(path: str, options: Mapping[str, Any]) -> dict[str, str]:
    return {"path": path, **{key: _text(options.get(key)) for key in OPTIONS}}


def _files(block: Any) -> dict[str, dict[str, str]]:
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
) -> list[dict[str, str]]:
    """The files to write and the options of each (see ssh_config_targets.yml)."""
    given = {key: _text(value) for key, value in (explicit or {}).items() if value is not None}
    given = {key: value for key, value in given.items() if key in OPTIONS}
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


def ssh_config_record(
    records: Any, name: str, written: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The record with the written files added or replaced under name (see
    ssh_config_record.yml); other names are kept as they are."""
    result = _records(records)
    files = _files(result.get(name))
    for options in written or []:
        file = _text(options.get("path"))
        if file:
            files[file] = _entry(file, options)
    result[name] = {"files": files}
    return result


class FilterModule:
    """ssh_config_targets and ssh_config_record."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_targets": ssh_config_targets, "ssh_config_record": ssh_config_record}
