# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The digest of a role's inputs for cloudtpu.pod.tpu_state: its variables, the facts that
shape what it writes, and its own code (the collection's roles and plugins). The filter
cloudtpu.pod.state_digest and the lookup cloudtpu.pod.role_digest compute it with this."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

FACTS = (
    "distribution",
    "distribution_release",
    "distribution_version",
    "architecture",
    "os_family",
    "service_mgr",
)
SKIPPED_DIRS = {"__pycache__", "molecule", "tests"}
_CODE: dict[tuple, str] = {}


def _tree_stamp(folder: str) -> tuple:
    stamp = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".pyc", ".md")):
                continue
            path = os.path.join(root, name)
            info = os.stat(path)
            stamp.append((os.path.relpath(path, folder), info.st_size, info.st_mtime_ns))
    return tuple(stamp)


def code_digest(folder: str) -> str:
    """sha256 over the relative names and contents of a folder's files (cached per process
    until a file's size or time changes)."""
    folder = os.path.realpath(folder)
    stamp = (folder, _tree_stamp(folder))
    if stamp not in _CODE:
        digest = hashlib.sha256()
        for rel, _size, _time in stamp[1]:
            digest.update(rel.encode() + b"\0")
            with open(os.path.join(folder, rel), "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
        _CODE[stamp] = digest.hexdigest()
    return _CODE[stamp]


def _plain(value: Any) -> Any:
    """Values as JSON sees them, whatever types templating returned."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def state_digest(
    values: Mapping, role_path: str, facts: Mapping | None = None, extra: Any = None
) -> str:
    # The collection's roles (a role imports others: every role's apt step is the apt role) and
    # its plugins, found from the role's folder.
    collection = os.path.dirname(os.path.dirname(os.path.realpath(role_path)))
    facts = facts or {}
    document = {
        "vars": _plain(values),
        "facts": {name: _plain(facts.get(name)) for name in FACTS},
        "extra": _plain(extra),
        "role": os.path.basename(os.path.realpath(role_path)),
        "code": [
            code_digest(os.path.join(collection, folder))
            for folder in ("roles", "plugins")
            if os.path.isdir(os.path.join(collection, folder))
        ],
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


_OPTIONS: dict[tuple, list[str]] = {}


def role_options(role_path: str, load: Any) -> list[str]:
    """The option names of the role's entry point main (meta/argument_specs.yml), read with
    load(text) (a YAML loader) and kept per process while the file stays the same."""
    spec = os.path.join(role_path, "meta", "argument_specs.yml")
    info = os.stat(spec)
    key = (spec, info.st_size, info.st_mtime_ns)
    if key not in _OPTIONS:
        with open(spec, encoding="utf-8") as handle:
            document = load(handle.read()) or {}
        main = (document.get("argument_specs") or {}).get("main") or {}
        _OPTIONS[key] = list(main.get("options") or {})
    return _OPTIONS[key]
