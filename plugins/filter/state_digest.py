# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The digest of a role's inputs for cloudtpu.pod.tpu_state: its variables, the facts that
shape what it writes, and its own code (the role's files and the collection's plugins)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

DOCUMENTATION = r"""
name: state_digest
author: cloudtpu.pod maintainers
version_added: 0.3.0
short_description: The digest of a role's inputs, for its converged fast path
description:
  - Returns a sha256 of the role's variables (O(_input), every option of its argument spec),
    of the facts that decide what it writes (distribution and its release and version,
    architecture, OS family, service manager), of O(extra) (what the role works out from the
    inventory, such as a pod's server and addresses), and of its code. The code is every file of
    the collection's C(roles) and C(plugins) folders (roles import each other), so a new release
    of the collection sends every role through its tasks once.
  - M(cloudtpu.pod.tpu_state) records it after the role's tasks succeeded; a run whose digest
    differs from the record runs the tasks again.
positional: _input, role_path
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
  role_path:
    description: The role's folder (C(role_path)); the collection is found from it.
    type: str
    required: true
  facts:
    description: The host's C(ansible_facts).
    type: dict
    default: {}
  extra:
    description: Anything else the role's result depends on.
    type: raw
"""

EXAMPLES = r"""
tpu_base__digest: >-
  {{ dict(tpu_base__option_names | zip(query('ansible.builtin.vars', *tpu_base__option_names,
     default=None))) | cloudtpu.pod.state_digest(role_path, facts=ansible_facts) }}
"""

RETURN = r"""
_value:
  description: A sha256 in hex.
  type: str
"""

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


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"state_digest": state_digest}
