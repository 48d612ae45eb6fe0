# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The request of playbooks/sync.yml: what goes where, checked before anything is copied."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    boolean_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import WORK_ROOTS

DOCUMENTATION = r"""
name: sync_options
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Check the variables of playbooks/sync.yml and work out the destination
description:
  - Exactly one source, a local folder (C(src), from C(tpu_sync_src); as every local path the
    playbooks take, without C(..), a system folder or a symbolic link on the way) or
    a git repository (C(repo) at C(version), from C(tpu_sync_repo) and C(tpu_sync_version)).
  - The destination is C(tpu_sync_dest) (an absolute, normalised path inside the login home,
    C(/opt), C(/srv) or C(/mnt), checked by the collection's C(path_problem)), else
    C(<home>/<name>) where the name is the folder's or the repository's base name.
  - Never a dot-folder of the login home or a folder inside one (C(.ssh), C(.config),
    C(.gnupg), ...); a sync there would overwrite keys and settings, and with C(delete) remove
    what the source lacks (C(authorized_keys)).
  - Never fails itself; returns C(ok=false) and a message naming each variable that is wrong,
    its value and what is allowed. Without I(home) the destination is not resolved (the
    checks that need the home are left for the per-host call).
positional: _input, home
options:
  _input:
    description: The raw values, keys C(src), C(repo), C(version), C(dest), C(delete).
    type: dict
    required: true
  home:
    description: The login user's home on the host.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: Where the code goes on this worker
  ansible.builtin.set_fact:
    sync: >-
      {{ {'src': tpu_sync_src} | cloudtpu.pod.sync_options(lookup('cloudtpu.pod.login', 'home')) }}
# {"src": "/home/me/proj", ...} -> {"mode": "folder", "dest": "/home/tpu/proj", ...}
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(errors), C(mode) (C(folder), C(git) or empty when nothing
    was asked), C(src) (absolute, on this machine), C(repo), C(version), C(name), C(dest),
    C(delete) and C(needs_root) (the destination is outside the login home).
  type: dict
"""

NAME_RE = re.compile(r"^[A-Za-z0-9._+-]+\Z")
# Where code may go besides the login home (strictly inside them).
ROOTS = WORK_ROOTS
REPO_ALLOWED = (
    "allowed: an address git can clone (https://..., ssh://..., git@host:path), not starting "
    "with '-'"
)
VERSION_RE = re.compile(r"^[A-Za-z0-9._/+-]+\Z")
VERSION_ALLOWED = (
    "allowed: a branch, tag or commit of letters, digits and . _ / + -, not starting with '-'"
)


def _text(value: Any, name: str, allowed: str, errors: list[str]) -> str:
    """A string variable, stripped ('' when not given); another type is refused."""
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(f"{name} is {_shown(value)}: not a string; {allowed}")
        return ""
    return value.strip()


def repo_name(repo: str) -> str:
    """The folder name git would clone ``repo`` into (without .git)."""
    tail = re.split(r"[/:]", repo.rstrip("/"))[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def _below(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip("/") + "/")


def dot_folder(path: str, home: str) -> str:
    """The dot-folder of the login home that path is or is inside (``.ssh``), else ''."""
    if not home or not _below(path, home):
        return ""
    first = posixpath.relpath(path, home).split("/", 1)[0]
    return first if first.startswith(".") else ""


def _dot_problem(name: str, value: Any, dest: str, home: str) -> str:
    folder = dot_folder(dest, home)
    if not folder:
        return ""
    return (
        f"{name} is {_shown(value)}: the files would go to {dest}, inside {home}/{folder}, a "
        "dot-folder of the login home, where its keys and settings live (.ssh, .config, "
        ".gnupg, ...), which a sync overwrites and with tpu_sync_delete empties; allowed: a "
        f"folder of {home} whose name does not start with a dot, or one inside "
        + " or ".join(ROOTS)
    )


def _dest(value: Any, home: str, errors: list[str]) -> str:
    text = str(value).strip() if isinstance(value, str) else value
    under = [home, *ROOTS] if home else None
    problem = path_problem(text, "tpu_sync_dest", under=under) or _dot_problem(
        "tpu_sync_dest", value, str(text), home
    )
    if problem:
        errors.append(problem)
        return ""
    return text


def sync_options(raw: Mapping[str, Any], home: str = "") -> dict[str, Any]:
    """The typed request, or ok=false and every problem in one message."""
    errors: list[str] = []
    src = raw.get("src")
    src = "" if src is None else src
    repo = _text(raw.get("repo"), "tpu_sync_repo", REPO_ALLOWED, errors)
    version = _text(raw.get("version"), "tpu_sync_version", VERSION_ALLOWED, errors)
    delete, given = False, raw.get("delete")
    if given not in (None, ""):
        problem = boolean_problem(given, "tpu_sync_delete")
        if problem:
            errors.append(problem)
        else:
            delete = boolean(given)
    mode, name, src_path = "", "", ""
    if src != "" and repo:
        errors.append("give either tpu_sync_src (a local folder) or tpu_sync_repo, not both")
    elif src != "":
        mode = "folder"
        problem = local_path_problem(src, "tpu_sync_src", "folder")
        if problem:
            errors.append(problem)
        else:
            src_path = local_path(src)
            name = os.path.basename(src_path)
    elif repo:
        mode = "git"
        name = repo_name(repo)
        if not name or repo.startswith("-") or name.startswith("-") or "\n" in repo:
            errors.append(
                f"tpu_sync_repo is {_shown(repo)}: not a repository address git can clone; "
                + REPO_ALLOWED
            )
    if version and mode != "git":
        errors.append("tpu_sync_version goes with tpu_sync_repo (a branch, tag or commit)")
    if version and (version.startswith("-") or not VERSION_RE.match(version)):
        errors.append(
            f"tpu_sync_version is {_shown(version)}: not a branch, tag or commit name; "
            + VERSION_ALLOWED
        )

    dest = ""
    given = raw.get("dest")
    if given not in (None, ""):
        dest = _dest(given, home, errors)
    elif home and mode and name:  # without a name, the source's own problem is said
        if NAME_RE.match(name) and name not in (".", ".."):
            dest = posixpath.join(home, name)
            source = ("tpu_sync_src", src) if mode == "folder" else ("tpu_sync_repo", repo)
            problem = _dot_problem(*source, dest, home)
            if problem:
                errors.append(problem + " (set tpu_sync_dest)")
                dest = ""
        else:
            errors.append(
                f"cannot name the destination after {name!r}; set tpu_sync_dest "
                "(an absolute path inside the login home, /opt, /srv or /mnt)"
            )
    needs_root = bool(dest and home and not _below(dest, home))
    return {
        "ok": not errors,
        "errors": errors,
        "message": "; ".join(errors) if errors else "ok",
        "mode": mode,
        "src": src_path,
        "repo": repo,
        "version": version or "HEAD",
        "name": name,
        "dest": dest,
        "delete": delete,
        "needs_root": needs_root,
    }


class FilterModule:
    """The sync_options filter."""

    def filters(self) -> dict[str, Any]:
        return {"sync_options": sync_options}
