# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Who logs in to a worker, and where their home, venv and run logs are.

The one place that decides it (the ``cloudtpu.pod.login`` lookup is its only caller in plays).
The answer comes from variables only, never from facts: a fact cache gathered under become
says ``user_dir=/root`` for everybody, and a cache must not change who the user is.

Order for the user: ``tpu_login_user``, else the connection user (``ansible_user``, then
``ansible_ssh_user``), else the configured remote user (``ANSIBLE_REMOTE_USER`` or
``remote_user`` in ansible.cfg), else the controller's own user (what ssh itself would use).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import path_problem

# Whole values only (\Z, not $): "tpu\n" or " tpu" is not a user name.
USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}\Z")
VERSION_RE = re.compile(r"^3\.[0-9]{1,2}\Z")
DEFAULT_PYTHON_VERSION = "3.10"
RUNS_FOLDER = "cloudtpu-runs"
KEYS = ("user", "home", "venv", "runs_dir", "source")
# Asked for by name only (not part of the mapping, which role digests include): the user Ansible
# connects as, which is the login user unless tpu_login_user names another one.
CONNECTION_KEY = "connection_user"
# A venv is created, chowned to the user and put on PATH: only in the login home or in /opt.
VENV_FOLDERS = ("/opt",)

# Where the user may come from, in order, with the name a message uses for each.
USER_SOURCES = (
    ("tpu_login_user", "tpu_login_user"),
    ("ansible_user", "ansible_user"),
    ("ansible_ssh_user", "ansible_ssh_user"),
)


class LoginError(ValueError):
    """A login variable has a value that cannot be used; the message names it."""


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def check_user(name: str, value: Any) -> str:
    text = str(value) if value is not None else ""
    if not USER_RE.fullmatch(text):
        raise LoginError(
            f"{name} is {value!r}: a login user must be a Linux user name (lower-case letters, "
            "digits, '_', '-', '.', starting with a letter or '_', at most 32 characters)"
        )
    return text


def check_absolute(name: str, value: Any) -> str:
    text = str(value).strip() if value is not None else ""
    normal = posixpath.normpath(text) if text else ""
    if (
        not text.startswith("/")
        or ".." in text.split("/")
        or normal in ("/", "//")
        or "\n" in text
        or normal != text.rstrip("/")
    ):
        raise LoginError(
            f"{name} is {value!r}: it must be an absolute, normalised path below / "
            "(no '..', no '~', not / itself)"
        )
    return normal


def _user(
    variables: Mapping[str, Any],
    sources: tuple[tuple[str, str], ...],
    configured_remote_user: str | None,
    controller_user: Callable[[], str] | None,
) -> tuple[str, str]:
    """The first user of ``sources``, else the configured remote user, else the controller's."""
    for key, label in sources:
        value = variables.get(key)
        if not _blank(value):
            return check_user(label, value), label
    if not _blank(configured_remote_user):
        user = check_user(
            "remote_user (ANSIBLE_REMOTE_USER or ansible.cfg)", configured_remote_user
        )
        return user, "remote_user"
    if controller_user is not None:
        return check_user("the controller's user", controller_user()), "controller user"
    raise LoginError(
        "no login user: set tpu_login_user, ansible_user or ANSIBLE_REMOTE_USER to the user "
        "who logs in to the workers"
    )


def connection_user(
    variables: Mapping[str, Any],
    configured_remote_user: str | None = None,
    controller_user: Callable[[], str] | None = None,
) -> str:
    """The user Ansible connects as: the login user's order without ``tpu_login_user``.

    When it differs from the login user, the playbooks that act for the login user (run, logs,
    sync) become that user; when it is the same, they need no privilege at all.
    """
    return _user(variables, USER_SOURCES[1:], configured_remote_user, controller_user)[0]


def resolve(
    variables: Mapping[str, Any],
    configured_remote_user: str | None = None,
    controller_user: Callable[[], str] | None = None,
) -> dict[str, str]:
    """The login contract for one host, from its (already templated) variables.

    Returns ``{"user", "home", "venv", "runs_dir", "source"}``; ``source`` names where the
    user came from. Raises LoginError with the variable, its value and what is allowed.
    """
    user, source = _user(variables, USER_SOURCES, configured_remote_user, controller_user)

    home_value = variables.get("tpu_login_home")
    if _blank(home_value):
        home = "/root" if user == "root" else f"/home/{user}"
    else:
        home = check_absolute("tpu_login_home", home_value)
        # not a system folder (/etc, /tmp, /home itself...); root's own home is fine
        problem = "" if home == "/root" else path_problem(home, "tpu_login_home")
        if problem:
            raise LoginError(problem)

    version_value = variables.get("tpu_python_version")
    version = DEFAULT_PYTHON_VERSION if _blank(version_value) else str(version_value)
    if not isinstance(version_value, (str, type(None))) or not VERSION_RE.fullmatch(version):
        raise LoginError(
            f"tpu_python_version is {version_value!r}: it must be a Python version 3.X such as "
            f"'{DEFAULT_PYTHON_VERSION}' (quote it in YAML: 3.10 unquoted is the number 3.1)"
        )
    venv_value = variables.get("tpu_venv_path")
    if _blank(venv_value):
        venv = posixpath.join(home, ".venv" + version.replace(".", ""))
    else:
        venv = check_absolute("tpu_venv_path", venv_value)
        problem = path_problem(venv, "tpu_venv_path", under=[home, *VENV_FOLDERS])
        if problem:
            raise LoginError(problem)

    return {
        "user": user,
        "home": home,
        "venv": venv,
        "runs_dir": posixpath.join(home, RUNS_FOLDER),
        "source": source,
    }


def login_user_problem(
    login: Mapping[str, Any], host: str, entry: Sequence[Any] | None, home: bool = True
) -> str:
    """Why a worker's passwd entry does not fit the login contract, or ``''``.

    ``login`` is the contract (:func:`resolve`), ``entry`` the worker's passwd entry of the
    login user (its seven fields; None when the worker has no such user). With ``home``, the
    entry's home must be the contract's too (trailing slashes aside), and the message says how
    to name another home.
    """
    if entry is not None and (not home or str(entry[5]).rstrip("/") == login["home"]):
        return ""
    found = "has no such user" if entry is None else f"says its home is {entry[5]}"
    if not home:
        return (
            f"The login user is '{login['user']}' (from {login['source']}), but {host} {found}."
            " Set tpu_login_user (or ansible_user) to the user who logs in."
        )
    return (
        f"The login user is '{login['user']}' (from {login['source']}) with home"
        f" {login['home']}, but {host} {found}. Set tpu_login_user (or ansible_user) to the"
        " user who logs in, and tpu_login_home when the home is not /home/<user>."
    )
