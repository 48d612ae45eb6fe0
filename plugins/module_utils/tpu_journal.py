# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's journal of node specs that recovery is about to delete.

recover.yml deletes a lost node and creates it again from the spec the API reported for it.
Between the two the spec exists nowhere else: an API error on the create, a crash or Ctrl-C
would leave no node and nothing to make it from. So the spec is written here first, and a re-run
of the same command creates the node from it.

The journal is one JSON file per project and zone, ``journal-<project>-<zone>.json``, in the
collection's state folder on the controller (:func:`state_dir`: ``CLOUDTPU_STATE_DIR``, else
``~/.local/state/cloudtpu.pod``). The folder is made 0700 and the file written 0600 through a
temporary file and ``os.replace``, so a reader sees the old journal or the new one, never half
of one. A folder or file that is a symbolic link, belongs to another user or is writable by
others is refused: another user could then read the specs (their ``ssh-keys`` metadata, and
the secret values that ``tpu_secrets.py`` keeps out of output, such as a pull node's
startup-script with its access token) or point the writes elsewhere.

The journal keeps real values only: a spec to record that holds a hidden marker instead of a
secret value is resolved from the node's entry already in the journal, or refused.

An entry: ``{"name", "project", "zone", "spec", "step", "time"}``: ``spec`` is the node's spec
as ``cloudtpu.pod.tpu_node_info`` returns it (the options of ``cloudtpu.pod.tpu_node``),
``step`` is ``deleting`` (recorded before the delete) or ``creating`` (the old node is gone, the
create is next), ``time`` is UTC in ISO 8601.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    DEFAULT_STATE_DIR,
    STATE_DIR_ENV,
    local_path,
    local_path_problem,
    private_problem,
    state_dir,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import (
    GCP_NAMES,
    gcp_name_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import reveal

STEPS = ("deleting", "creating")
VERSION = 1
_NODE_ID = GCP_NAMES["node"][0]


class JournalError(Exception):
    """The journal cannot be used; the message says why and what to do."""


def journal_path(project: str, zone: str, folder: str | None = None) -> str:
    """The absolute path of the journal of ``project``/``zone`` in ``folder`` (the state
    folder by default)."""
    for value, name, kind in ((project, "project", "project"), (zone, "zone", "zone")):
        problem = gcp_name_problem(value, name, kind)
        if problem:
            raise JournalError(problem)
    return os.path.join(local_path(folder or state_dir()), f"journal-{project}-{zone}.json")


def _refuse(reason: str) -> JournalError:
    return JournalError(
        f"The recovery journal cannot be used: {reason}. It holds node specs (with their "
        f"ssh-keys), so it must be a private folder of yours: set {STATE_DIR_ENV} to a real "
        f"folder (default {DEFAULT_STATE_DIR}), not a symbolic link, owned by you and writable "
        "by you alone."
    )


def _check_folder(folder: str, make: bool) -> bool:
    """Whether the folder exists (made 0700 when ``make``); raises JournalError when unsafe."""
    problem = local_path_problem(folder, STATE_DIR_ENV, "new folder")
    if problem:
        raise _refuse(problem.split("; allowed:")[0])
    path = local_path(folder)
    if not os.path.lexists(path):
        if not make:
            return False
        try:
            os.makedirs(path, mode=0o700)
        except FileExistsError:
            pass  # made meanwhile by another run: checked below as any other
        except OSError as exc:
            raise _refuse(f"{path} cannot be made ({exc.strerror})") from None
    reason = private_problem(path, os.lstat(path), "folder")
    if reason:
        raise _refuse(reason)
    return True


def _load(path: str) -> dict[str, Any]:
    if not os.path.lexists(path):
        return {"version": VERSION, "nodes": {}}
    reason = private_problem(path, os.lstat(path), "file")
    if reason:
        raise _refuse(reason)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise JournalError(
            f"The recovery journal {path} cannot be read ({exc}). It holds the specs of nodes "
            "that recovery deleted and has not created again: look at it, repair or move it "
            "away, then run recover.yml again."
        ) from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("spec"), dict) for e in nodes.values()
    ):
        raise JournalError(
            f"The recovery journal {path} is not a journal of this collection (no 'nodes' "
            "mapping of entries with a 'spec'): look at it, repair or move it away, then run "
            "recover.yml again."
        )
    return data


def _save(path: str, data: Mapping[str, Any]) -> None:
    folder = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(prefix=".journal-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _locked(path: str):
    """Hold an exclusive lock on the journal's folder while the journal is read, changed and
    written: two recover.yml runs of one project and zone at once each keep the other's
    entries (the folder is locked, not a file in it, so nothing is left behind)."""
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read(project: str, zone: str, folder: str | None = None) -> dict[str, dict[str, Any]]:
    """The entries of the journal of ``project``/``zone`` by node name (``{}`` when there is
    no journal yet; nothing is made)."""
    folder = folder or state_dir()
    path = journal_path(project, zone, folder)
    if not _check_folder(folder, make=False):
        return {}
    return dict(_load(path)["nodes"])


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record(
    project: str,
    zone: str,
    nodes: Iterable[Mapping[str, Any]],
    step: str = "deleting",
    folder: str | None = None,
    write: bool = True,
) -> tuple[bool, dict[str, dict[str, Any]]]:
    """Record each of ``nodes`` (``{"name", "spec"}``) at ``step``; returns (changed, the
    entries after). With ``write`` false (check mode) nothing is written."""
    if step not in STEPS:
        raise JournalError(f"step is {step!r}; allowed: {', '.join(STEPS)}.")
    folder = folder or state_dir()
    path = journal_path(project, zone, folder)
    exists = _check_folder(folder, make=write)
    with _locked(path) if exists and write else contextlib.nullcontext():
        return _record(path, exists, project, zone, nodes, step, write)


def _record(path, exists, project, zone, nodes, step, write):
    data = _load(path) if exists else {"version": VERSION, "nodes": {}}
    entries = dict(data["nodes"])
    changed = False
    for node in nodes:
        name, spec = node.get("name"), node.get("spec")
        if not isinstance(name, str) or not _NODE_ID.fullmatch(name):
            raise JournalError(f"A journal entry needs a node ID as its name; got {name!r}.")
        if not isinstance(spec, Mapping) or not spec.get("accelerator_type"):
            raise JournalError(
                f"The journal entry of {name} needs the node's spec (a mapping with "
                f"accelerator_type); got {spec!r}."
            )
        old = entries.get(name) or {}
        spec = _revealed(name, spec, old)
        if old.get("spec") == spec and old.get("step") == step:
            continue
        entries[name] = {
            "name": name,
            "project": project,
            "zone": zone,
            "spec": dict(spec),
            "step": step,
            "time": _utc_now(),
        }
        changed = True
    if changed and write:
        _save(path, {"version": VERSION, "nodes": entries})
    return changed, entries


def _revealed(name: str, spec: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with hidden markers in its metadata replaced by the values of ``old``, the
    node's entry already in the journal; JournalError when one is not there."""
    spec = dict(spec)
    kept = old.get("spec") if isinstance(old.get("spec"), Mapping) else {}
    metadata, problems = reveal(
        spec.get("metadata") if isinstance(spec.get("metadata"), Mapping) else None,
        [("the journal's entry", kept.get("metadata"))],
    )
    if problems:
        raise JournalError(
            f"The journal entry of {name} cannot be written: {' '.join(problems)} The journal "
            "keeps the values themselves: cloudtpu.pod.tpu_node with journal: true and state: "
            "absent writes the node's spec as the API reports it before deleting the node."
        )
    if metadata is not None:
        spec["metadata"] = metadata
    return spec


def clear(
    project: str,
    zone: str,
    names: Iterable[str],
    folder: str | None = None,
    write: bool = True,
) -> tuple[bool, dict[str, dict[str, Any]]]:
    """Remove the entries of ``names``; returns (changed, the entries left). An emptied
    journal file is removed. With ``write`` false (check mode) nothing is written."""
    folder = folder or state_dir()
    path = journal_path(project, zone, folder)
    if not _check_folder(folder, make=False):
        return False, {}
    with _locked(path) if write else contextlib.nullcontext():
        entries = dict(_load(path)["nodes"])
        gone = [name for name in names if name in entries]
        for name in gone:
            del entries[name]
        if gone and write:
            if entries:
                _save(path, {"version": VERSION, "nodes": entries})
            else:
                os.unlink(path)
    return bool(gone), entries
