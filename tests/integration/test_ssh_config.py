"""playbooks/ssh_config.yml: a managed block per inventory in the user's SSH config, with the
user, key and known_hosts file Ansible connects with; bad input refused before anything is
written. Refreshes and port forwards: test_ssh_config_refresh.py.

The play runs for real on the control machine against a static inventory, with the config
path (or HOME) pointed at a temporary directory; `ssh -G` then shows what ssh itself makes of
the result, without connecting anywhere.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import error_text
from tests.integration.ssh_config_support import (
    AFTER,
    BEFORE,
    run,
    split_block,
    ssh_g,
    user_config,
    write_inventory,
)

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return user_config(tmp_path)


def test_block_is_updated_in_place_when_ips_change(tmp_path: Path, config: Path):
    inventory = tmp_path / "inventory.json"
    path_arg = ("-e", f"tpu_ssh_config_path={config}")

    write_inventory(inventory, {"pod-w0": "203.0.113.10", "pod-w1": "203.0.113.11"})
    first = run(inventory, *path_arg)
    assert first.returncode == 0, first.stdout + first.stderr
    # The user adds something after the block between the runs.
    config.write_text(config.read_text() + AFTER)
    text_1 = config.read_text()
    before_1, block_1, after_1 = split_block(text_1)

    write_inventory(inventory, {"pod-w0": "198.51.100.20", "pod-w1": "198.51.100.21"})
    second = run(inventory, *path_arg)
    assert second.returncode == 0, second.stdout + second.stderr
    text_2 = config.read_text()
    before_2, block_2, after_2 = split_block(text_2)

    evidence = f"--- after run 1:\n{text_1}\n--- after run 2:\n{text_2}"
    assert "HostName 203.0.113.10" in block_1, evidence
    assert "HostName 198.51.100.20" in block_2, evidence
    assert "HostName 198.51.100.21" in block_2, evidence
    assert "203.0.113." not in text_2, evidence
    # Everything outside the block is untouched, byte for byte, and the block kept its place.
    assert before_2 == before_1, evidence
    assert after_2 == after_1, evidence
    assert BEFORE in after_2 and after_2.endswith(AFTER), evidence
    assert stat.S_IMODE(config.stat().st_mode) == 0o600, oct(config.stat().st_mode)


def test_second_run_with_the_same_inventory_changes_nothing(tmp_path: Path, config: Path):
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    path_arg = ("-e", f"tpu_ssh_config_path={config}")
    assert run(inventory, *path_arg).returncode == 0
    again = run(inventory, *path_arg)
    recap = [line for line in again.stdout.splitlines() if line.startswith("localhost")]
    assert again.returncode == 0, again.stdout + again.stderr
    assert recap and "changed=0" in recap[0], again.stdout


def test_ssh_reads_the_entries_as_meant(tmp_path: Path, config: Path):
    inventory = write_inventory(
        tmp_path / "inventory.json", {"pod-w0": "203.0.113.10", "pod-w1": "203.0.113.11"}
    )
    result = run(
        inventory,
        "-e",
        f"tpu_ssh_config_path={config}",
        "-e",
        "tpu_ssh_config_proxy_jump=me@bastion.example.com:2222",
        "-e",
        "tpu_ssh_config_identity_file=~/.ssh/tpu_key",
        "-e",
        "tpu_ssh_config_port=2200",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    seen = ssh_g(config, "pod-w1")
    evidence = f"{config.read_text()}\nssh -G pod-w1: {seen}"
    assert seen["hostname"] == "203.0.113.11", evidence
    assert seen["user"] == "alice", evidence
    assert seen["port"] == "2200", evidence
    assert seen["proxyjump"] == "me@bastion.example.com:2222", evidence
    assert seen["stricthostkeychecking"] == "accept-new", evidence
    assert seen["identityfile"].endswith("/.ssh/tpu_key"), evidence
    # The user's own entry still reads the same.
    assert ssh_g(config, "github.com")["user"] == "git", evidence


def test_a_host_star_section_of_the_user_does_not_override_the_entries(tmp_path: Path):
    ssh_dir = tmp_path / "ssh"
    ssh_dir.mkdir(mode=0o700)
    config = ssh_dir / "config"
    config.write_text("Host *\n    User someone-else\n    Port 2022\n")
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    assert run(inventory, "-e", f"tpu_ssh_config_path={config}").returncode == 0
    seen = ssh_g(config, "pod-w0")
    other = ssh_g(config, "elsewhere.example.com")
    evidence = f"{config.read_text()}\npod-w0: {seen}\nelsewhere: {other}"
    assert (seen["user"], seen["port"]) == ("alice", "22"), evidence
    assert (other["user"], other["port"]) == ("someone-else", "2022"), evidence


def test_default_path_is_created_private_under_home(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    result = run(inventory, home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    ssh_dir, config = home / ".ssh", home / ".ssh" / "config"
    assert stat.S_IMODE(ssh_dir.stat().st_mode) == 0o700, oct(ssh_dir.stat().st_mode)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600, oct(config.stat().st_mode)
    assert f"# BEGIN cloudtpu.pod ssh_config: {inventory}" in config.read_text()


BAD = [
    # id, extra vars, inventory addresses, the variable or host the error names, value shown
    (
        "relative-path",
        {"tpu_ssh_config_path": "ssh/config"},
        None,
        "tpu_ssh_config_path",
        "'ssh/config'",
    ),
    ("port-range", {"tpu_ssh_config_port": 70000}, None, "tpu_ssh_config_port", "70000"),
    ("port-text", {"tpu_ssh_config_port": "ssh"}, None, "tpu_ssh_config_port", "'ssh'"),
    ("proxy-space", {"tpu_ssh_config_proxy_jump": "a b"}, None, "tpu_ssh_config_proxy_jump", "a b"),
    (
        "identity-quote",
        {"tpu_ssh_config_identity_file": '~/my "key"'},
        None,
        "tpu_ssh_config_identity_file",
        "my",
    ),
    ("user-name", {"tpu_ssh_config_user": "Bad User"}, None, "tpu_ssh_config_user", "Bad User"),
    ("no-group", {"tpu_ssh_config_group": "nope"}, None, "tpu_ssh_config_group", "nope"),
    ("pattern-host", {}, {"pod-w*": "203.0.113.10"}, "pod-w*", "pattern"),
    ("address-newline", {}, {"pod-w0": "203.0.113.10\n  ProxyCommand x"}, "ansible_host", "Proxy"),
    # a final line break too: the checks match the whole value (cloudtpu.pod.fullmatch)
    ("user-newline", {"tpu_ssh_config_user": "alice\n"}, None, "tpu_ssh_config_user", "alice"),
    ("address-final-newline", {}, {"pod-w0": "203.0.113.10\n"}, "ansible_host", "203.0.113.10"),
    # port forwards to worker 0
    (
        "forward-unknown-service",
        {"tpu_ssh_config_forwards": ["notebook"]},
        None,
        "tpu_ssh_config_forwards",
        "known services: jupyter, tensorboard, profiler",
    ),
    (
        "forward-port-range",
        {"tpu_ssh_config_forwards": [{"local": 8080, "remote": 70000}]},
        None,
        "tpu_ssh_config_forwards",
        "70000",
    ),
    (
        "forward-twice",
        {"tpu_ssh_config_forwards": ["jupyter", {"local": 8888, "remote": 9999}]},
        None,
        "tpu_ssh_config_forwards",
        "8888",
    ),
    (
        "forward-host-space",
        {"tpu_ssh_config_forwards": [{"local": 1, "remote": 2, "host": "a b"}]},
        None,
        "tpu_ssh_config_forwards",
        "a b",
    ),
    ("forward-not-a-list", {"tpu_ssh_config_forwards": "jupyter"}, None, "forwards", "not a list"),
]


@pytest.mark.parametrize(
    ("extra", "addresses", "named", "value"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_refused_before_writing(tmp_path, config, extra, addresses, named, value):
    inventory = write_inventory(tmp_path / "inventory.json", addresses or {"pod-w0": "10.0.0.2"})
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps({"tpu_ssh_config_path": str(config), **extra}))
    result = run(inventory, "-e", f"@{vars_file}")
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, out
    assert named in error, f"the error does not name {named}:\n{error or out}"
    assert value in error, f"the error does not show {value!r}:\n{error or out}"
    assert config.read_text() == BEFORE, config.read_text()


def test_entries_carry_the_key_and_known_hosts_file_ansible_uses(tmp_path: Path, config: Path):
    inventory = write_inventory(
        tmp_path / "inventory.json",
        {"pod-w0": "203.0.113.10"},
        ansible_ssh_private_key_file="/keys/pod key",
    )
    known = tmp_path / "known hosts"
    common = f"-o ControlMaster=auto -o 'UserKnownHostsFile={known}'"
    result = run(inventory, "-e", f"tpu_ssh_config_path={config}", ANSIBLE_SSH_COMMON_ARGS=common)
    out = result.stdout + result.stderr
    # A key path with a space cannot be one IdentityFile word: refused, nothing written.
    assert result.returncode != 0 and "ansible_ssh_private_key_file" in error_text(out), out
    assert config.read_text() == BEFORE

    write_inventory(
        inventory,
        {"pod-w0": "203.0.113.10"},
        ansible_ssh_private_key_file="/keys/pod_key",
        tpu_login_user="tpu",
    )
    result = run(inventory, "-e", f"tpu_ssh_config_path={config}", ANSIBLE_SSH_COMMON_ARGS=common)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = ssh_g(config, "pod-w0")
    evidence = f"{config.read_text()}\nssh -G pod-w0: {seen}"
    assert seen["user"] == "tpu", evidence  # the login user (tpu_login_user) over ansible_user
    assert seen["identityfile"] == "/keys/pod_key", evidence
    # One file whose name has a space: written quoted, read by ssh as one path.
    assert seen["userknownhostsfile"] == str(known), evidence
    # Without a key or known_hosts file in Ansible's settings, ssh keeps its own defaults.
    write_inventory(inventory, {"pod-w0": "203.0.113.10"})
    assert run(inventory, "-e", f"tpu_ssh_config_path={config}").returncode == 0
    block = split_block(config.read_text())[1]
    assert "IdentityFile" not in block and "UserKnownHostsFile" not in block, block
