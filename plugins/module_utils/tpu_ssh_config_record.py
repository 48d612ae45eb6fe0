# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The SSH config files playbooks/ssh_config.yml writes, with the options of each, and its record.

The record of the files written is a JSON object ``{name: {"files": {path: options}}}``, where
options are ``path``, ``user``, ``identity_file``, ``proxy_jump`` and ``port`` (text, '' for the
default) and ``forwards`` (the port forwards to worker 0 as given, a list; [] for none, also when a
record predates them). The earlier shape, one file per name (``{name: options}``), is still read.

Its one home: :func:`ssh_config_targets` (the files a run writes) and :func:`ssh_config_record`
(the record after it) read and write the shape here; the filters of the same names raise a
:class:`RecordError` as AnsibleFilterError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

OPTIONS = ("user", "identity_file", "proxy_jump", "port")
# Not text: the port forwards to worker 0, as given (a list once checked).
FORWARDS = "forwards"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class RecordError(ValueError):
    """A record that cannot be read; the message says what it is instead."""


def _records(records: Any) -> dict[str, Any]:
    """The record as a dict: from its JSON text ('' or None for none) or a dict."""
    if records is None or (isinstance(records, str) and not records.strip()):
        return {}
    if isinstance(records, str):
        try:
            records = json.loads(records)
        except ValueError as exc:
            raise RecordError(
                f"The record of written SSH config files (tpu_ssh_config_record) is not JSON: {exc}"
            ) from exc
    if not isinstance(records, Mapping):
        raise RecordError(
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
    """The files to write and the options of each: without ``refresh`` one file, ``path`` or
    else ``default_path``; with it every file recorded for ``name`` (or only ``path``, else
    ``refresh_path``, when one is given). Explicit options win over recorded ones; an option
    given as None is not given."""
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


def ssh_config_record(
    records: Any, name: str, written: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The record with the written files added or replaced (by path) under name; a name in the
    earlier shape keeps its file; other names are kept as they are."""
    result = _records(records)
    files = _files(result.get(name))
    for options in written or []:
        file = _text(options.get("path"))
        if file:
            files[file] = _entry(file, options)
    result[name] = {"files": files}
    return result
