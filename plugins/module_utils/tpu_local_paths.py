# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Paths on this machine (the controller) that a playbook reads or writes: a script to copy, a
folder to sync, a folder to fetch logs into.

:func:`local_path_problem` returns ``''`` when the path is fine, else one sentence that names
the variable, the value given and what is allowed, as the checks of :mod:`tpu_checks` do;
:func:`local_path` is the absolute path it checked. A path may be absolute, relative to the
current folder or below ``~/``; it is refused when it contains ``..``, a control character or
a bidirectional-text control (``tpu_checks.unsafe_character``), when it is ``/`` or a system
folder or inside one (``tpu_checks.system_folder``), and when it goes through a symbolic link:
a link on the way (one that another user could have put there, or point elsewhere later)
decides where a read or a write really lands, so the real path must be given.
The current folder is the real one (``os.getcwd``), and ``~`` is the real path of the home, so
only the links in what was written count.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    system_folder,
    unsafe_character,
)

# The collection's state folder on the controller (ssh_config.yml's record, recover.yml's journal).
STATE_DIR_ENV = "CLOUDTPU_STATE_DIR"
DEFAULT_STATE_DIR = "~/.local/state/cloudtpu.pod"

# What the path must be, per kind: an existing file, an existing folder, or a folder that the
# playbook makes when it is missing.
LOCAL_KINDS = {
    "file": "a file",
    "folder": "a folder",
    "new folder": "a folder (made when missing)",
}


def local_path(value: str) -> str:
    """The absolute, normalised path on this machine that ``value`` names."""
    if value == "~" or value.startswith("~/"):
        home = os.path.realpath(os.path.expanduser("~"))
        return os.path.normpath(home + value[1:])
    return os.path.normpath(os.path.join(os.getcwd(), value))


def state_dir(environ: Mapping[str, str] | None = None) -> str:
    """The collection's state folder on the controller, as written (``~`` not expanded):
    ``CLOUDTPU_STATE_DIR``, else ``~/.local/state/cloudtpu.pod``."""
    environ = os.environ if environ is None else environ
    return environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR


def _first_link(path: str) -> str:
    """The first symbolic link on the way to ``path`` (``path`` itself included), or ``''``."""
    here = ""
    for part in path.strip("/").split("/"):
        here += "/" + part
        if os.path.islink(here):
            return here
        if not os.path.lexists(here):
            return ""
    return ""


def local_path_problem(value: Any, name: str, kind: str = "folder") -> str:
    """Why ``value`` is not an acceptable path on this machine for ``name``; ``''`` when it is.

    ``kind``: ``file`` (must exist), ``folder`` (must exist) or ``new folder`` (a folder, or
    nothing yet).
    """
    allowed = (
        f"{LOCAL_KINDS[kind]} on this machine, absolute, relative to the current folder or below"
        " ~/, without '..', control characters or a symbolic link on the way, not / or a system"
        " folder (such as /etc, /usr, /var, /tmp or /home themselves)"
    )

    def problem(reason: str) -> str:
        return f"{name} is {_shown(value)}: {reason}; allowed: {allowed}."

    if not isinstance(value, str) or not value.strip():
        return problem("not a path")
    unsafe = unsafe_character(value)
    if unsafe:
        return problem(f"it contains {unsafe}")
    if ".." in value.split("/"):
        return problem("it contains '..'")
    if value.startswith("~") and not (value == "~" or value.startswith("~/")):
        return problem("it names another user's home")
    path = local_path(value)
    folder = system_folder(path)
    if folder == path:
        return problem("it is a system folder")
    if folder:
        return problem(f"it is in the system folder {folder}")
    link = _first_link(path)
    if link:
        return problem(f"it goes through the symbolic link {link} (to {os.readlink(link)})")
    if kind == "file" and not os.path.isfile(path):
        return problem(f"no such file on this machine (looked at {path})")
    if kind == "folder" and not os.path.isdir(path):
        return problem(f"no such folder on this machine (looked at {path})")
    if kind == "new folder" and os.path.lexists(path) and not os.path.isdir(path):
        return problem(f"{path} is not a folder")
    return ""


def private_problem(path: str, info: os.stat_result, kind: str) -> str:
    """Why the folder or file at ``path`` (its lstat or fstat ``info``) is not the user's own:
    a symbolic link, another kind, another owner, writable by others; ``''`` when it is."""
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link (to {os.readlink(path)})"
    wanted = stat.S_ISDIR if kind == "folder" else stat.S_ISREG
    if not wanted(info.st_mode):
        return f"{path} is not a {kind}"
    if info.st_uid != os.geteuid():
        return f"{path} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return ""
