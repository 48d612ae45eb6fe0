"""The user shared/new_workers.yml waits for SSH as, run as provision.yml and recover.yml import it.

recover.yml gives no user: its SSH play must connect as Ansible would anyway (the inventory's
ansible_user, else the configured remote user, else this machine's own user). A play keyword
cannot be omitted, so `default(omit)` there sent Ansible's omit placeholder to ssh as the user
name ("remote username contains invalid characters"), and recover waited ten minutes for
workers that had answered. provision.yml gives its login user, which wins over the configured one.

The worker is a closed local port: each case's wait fails at once, and ssh's own command line
(-vvv) shows the user it was given.
"""

from __future__ import annotations

import getpass
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import playbook_env, run_playbook
from tests.role_runner import REPO


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A local port that a socket holds without listening: a connection there is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _play(tmp_path: Path, user: str | None) -> Path:
    given = {
        "_tpu_new_workers_addresses": [],
        "_tpu_new_workers_known_hosts": str(tmp_path / "known_hosts"),
        "_tpu_new_workers_groups": ["pod"],
        "_tpu_new_workers_how": "",
        "_tpu_new_workers_show": False,
        "_tpu_new_workers_ssh_wait": True,
        "_tpu_new_workers_ssh_timeout": 1,
    }
    if user is not None:
        given["_tpu_new_workers_user"] = user
    shared = REPO / "playbooks" / "shared" / "new_workers.yml"
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"ansible.builtin.import_playbook": str(shared), "vars": given}]))
    return play


@pytest.mark.parametrize(
    ("inventory_user", "configured", "given", "expected"),
    [
        (None, None, None, "(this machine's user)"),
        (None, "carol", None, "carol"),
        ("alice", "carol", None, "alice"),
        (None, "carol", "bob", "bob"),  # provision.yml's login user
    ],
)
def test_the_ssh_wait_connects_as_ansible_would(
    tmp_path: Path,
    closed_port: int,
    inventory_user: str | None,
    configured: str | None,
    given: str | None,
    expected: str,
) -> None:
    host = {"ansible_host": "127.0.0.1", "ansible_port": closed_port}
    if inventory_user:
        host["ansible_user"] = inventory_user
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"children": {"pod": {"hosts": {"w0": host}}}}}))
    extra = {"ANSIBLE_REMOTE_USER": configured} if configured else {}
    env = playbook_env(ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / "cp"), **extra)
    done = run_playbook(_play(tmp_path, given), inventory, "-vvv", env=env, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "invalid characters" not in output, output[-3000:]
    users = set(re.findall(r"-o 'User=\"([^\"]*)\"'", output))
    if expected.startswith("("):
        expected = getpass.getuser()
    assert users == {expected}, output[-3000:]
