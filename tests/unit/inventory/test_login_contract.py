"""The login contract (module_utils/tpu_login.py): who logs in, where their files are."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_login import (
    LoginError,
    connection_user,
    resolve,
)


def controller() -> str:
    return "laptop-user"


@pytest.mark.parametrize(
    ("variables", "remote_user", "user", "source"),
    [
        ({"tpu_login_user": "tpu", "ansible_user": "root"}, "carl", "tpu", "tpu_login_user"),
        ({"ansible_user": "alice"}, "carl", "alice", "ansible_user"),
        ({"ansible_ssh_user": "sam"}, "carl", "sam", "ansible_ssh_user"),
        ({"ansible_user": "", "tpu_login_user": None}, "carl", "carl", "remote_user"),
        ({}, None, "laptop-user", "controller user"),
        ({}, "", "laptop-user", "controller user"),
    ],
)
def test_user_comes_from_variables_in_order(
    variables: dict[str, Any], remote_user: str | None, user: str, source: str
) -> None:
    login = resolve(variables, remote_user, controller)
    assert (login["user"], login["source"]) == (user, source)


@pytest.mark.parametrize(
    ("variables", "home", "venv", "runs_dir"),
    [
        ({"tpu_login_user": "tpu"}, "/home/tpu", "/home/tpu/.venv310", "/home/tpu/cloudtpu-runs"),
        ({"tpu_login_user": "root"}, "/root", "/root/.venv310", "/root/cloudtpu-runs"),
        (
            {"tpu_login_user": "tpu", "tpu_python_version": "3.11"},
            "/home/tpu",
            "/home/tpu/.venv311",
            "/home/tpu/cloudtpu-runs",
        ),
        (
            {"tpu_login_user": "tpu", "tpu_login_home": "/data/tpu/"},
            "/data/tpu",
            "/data/tpu/.venv310",
            "/data/tpu/cloudtpu-runs",
        ),
        (
            {"tpu_login_user": "tpu", "tpu_venv_path": "/opt/venvs/jax"},
            "/home/tpu",
            "/opt/venvs/jax",
            "/home/tpu/cloudtpu-runs",
        ),
    ],
)
def test_home_venv_and_runs(variables: dict[str, Any], home: str, venv: str, runs_dir: str) -> None:
    login = resolve(variables, None, controller)
    assert (login["home"], login["venv"], login["runs_dir"]) == (home, venv, runs_dir)


def test_facts_are_never_read() -> None:
    # A fact cache gathered under become says user_dir=/root and user_id=root; the contract
    # takes no facts, so they cannot change the answer.
    variables = {
        "ansible_user": "tpu",
        "ansible_facts": {"user_dir": "/root", "user_id": "root"},
        "ansible_user_dir": "/root",
        "ansible_user_id": "root",
    }
    assert resolve(variables, None, controller)["home"] == "/home/tpu"


@pytest.mark.parametrize(
    ("variables", "names"),
    [
        ({"tpu_login_user": "Robert; rm -rf /"}, ["tpu_login_user", "Robert; rm -rf /"]),
        ({"ansible_user": "../etc"}, ["ansible_user", "../etc"]),
        ({"tpu_login_user": "a" * 40}, ["tpu_login_user"]),
        ({"tpu_login_user": "tpu", "tpu_login_home": "home/tpu"}, ["tpu_login_home", "home/tpu"]),
        ({"tpu_login_user": "tpu", "tpu_login_home": "/"}, ["tpu_login_home"]),
        ({"tpu_login_user": "tpu", "tpu_login_home": "/home/../etc"}, ["tpu_login_home", ".."]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "~/.venv"}, ["tpu_venv_path", "~/.venv"]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/opt//v"}, ["tpu_venv_path"]),
        # a venv only in the login home or /opt, as the python role makes it
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/srv/venv"}, ["tpu_venv_path", "/opt"]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/home/tpux/v"}, ["tpu_venv_path", "inside"]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/opt"}, ["tpu_venv_path", "system folder"]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/var/run/v"}, ["tpu_venv_path", "/var/run"]),
        ({"tpu_login_user": "tpu", "tpu_venv_path": "/home/tpu"}, ["tpu_venv_path", "inside"]),
        ({"tpu_login_user": "tpu", "tpu_python_version": 3.1}, ["tpu_python_version", "3.1"]),
        ({"tpu_login_user": "tpu", "tpu_python_version": "python3"}, ["tpu_python_version"]),
        # whole values only: a trailing line break or a space is not trimmed into a good value
        ({"tpu_login_user": "tpu\n"}, ["tpu_login_user", "'tpu\\n'"]),
        ({"ansible_user": "tpu\n"}, ["ansible_user", "'tpu\\n'"]),
        ({"tpu_login_user": " tpu"}, ["tpu_login_user", "' tpu'"]),
        ({"ansible_user": "  bob  "}, ["ansible_user", "'  bob  '"]),
        ({"tpu_login_user": "tpu", "tpu_python_version": "3.10\n"}, ["tpu_python_version"]),
    ],
)
def test_bad_values_are_refused_by_name(variables: dict[str, Any], names: list[str]) -> None:
    with pytest.raises(LoginError) as caught:
        resolve(variables, None, controller)
    for name in names:
        assert name in str(caught.value)


def test_no_user_anywhere_is_an_error() -> None:
    with pytest.raises(LoginError, match="tpu_login_user, ansible_user or ANSIBLE_REMOTE_USER"):
        resolve({}, None, None)


@pytest.mark.parametrize(
    ("variables", "remote_user", "login", "connection"),
    [
        # an operator connects as tpu (sudo), the researcher alice is the login user
        ({"tpu_login_user": "alice", "ansible_user": "tpu"}, "carl", "alice", "tpu"),
        ({"tpu_login_user": "alice"}, "carl", "alice", "carl"),
        ({"tpu_login_user": "alice"}, None, "alice", "laptop-user"),
        ({"tpu_login_user": "alice", "ansible_ssh_user": "root"}, None, "alice", "root"),
        # the usual case: the login user is the connection user
        ({"ansible_user": "tpu"}, "carl", "tpu", "tpu"),
        ({"tpu_login_user": "tpu", "ansible_user": "tpu"}, None, "tpu", "tpu"),
        ({}, "carl", "carl", "carl"),
    ],
)
def test_connection_user_is_the_order_without_tpu_login_user(
    variables: dict[str, Any], remote_user: str | None, login: str, connection: str
) -> None:
    assert resolve(variables, remote_user, controller)["user"] == login
    assert connection_user(variables, remote_user, controller) == connection


def test_connection_user_is_checked_like_the_login_user() -> None:
    with pytest.raises(LoginError, match="ansible_user"):
        connection_user({"tpu_login_user": "alice", "ansible_user": "Bad User"}, None, controller)
