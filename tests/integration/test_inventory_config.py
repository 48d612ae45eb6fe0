"""The repository's inventory settings (ansible.cfg [inventory], inventories/gcp/tpu_vm.yml),
with ansible-inventory and ansible-playbook against the emulator.

- A source given with -i that no plugin can read fails the run (non-zero exit, one error) with
  the reason of the plugin that was meant to read it; plugins that do not read that kind of
  file (host_list, script for a file that is not executable, toml) add no noise. Without -i,
  plays on localhost still run.
- The tpu_vm plugin is reached through `auto` (its files name it under `plugin:`): a source it
  fails on calls the TPU API once and says so first; a tpu_vm config under a name the plugin
  does not accept is refused by name, before any call; a tpu_vm.yml and a user's INI file in
  one inventory folder are read together (tests/integration/test_inventory_formats.py: the
  other formats).
- inventories/gcp/tpu_vm.yml takes its credentials from GCP_AUTH_KIND and
  GCP_SERVICE_ACCOUNT_FILE (or GCP_ACCESS_TOKEN), as the modules do.
- inventories/gcp sets no ansible_user: the login user is Ansible's own (-u,
  ANSIBLE_REMOTE_USER), as the login contract reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import VENV_BIN, Emulator, ansible_inventory, start_emulator
from tools.tpu_emulator.testing import REPO, TOKEN, node

PROJECT = "config-project"
STATE = {
    "projects": {
        PROJECT: {"zones": {"us-central2-b": {"nodes": [node("cfg-pod", "v4-16")]}}},
        "no-viewer": {"denied_permissions": ["tpu.nodes.list"], "zones": {"us-east1-d": {}}},
    }
}
UNRELATED_PLUGINS = ("'host_list' plugin", "'script' plugin", "'toml' plugin")
GCP = REPO / "inventories" / "gcp"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from start_emulator(STATE, tmp_path_factory.mktemp("emulator"))


def playbook(inventory: str | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A play on localhost that only says hello, with the repository's ansible.cfg."""
    play = tmp_path / "hello.yml"
    play.write_text(
        "- name: Hello\n  hosts: localhost\n  connection: local\n  gather_facts: false\n"
        "  tasks:\n    - name: Say it\n      ansible.builtin.debug:\n        msg: hello\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GCP_"))}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update(ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_LOCALHOST_WARNING="false")
    command = [str(VENV_BIN / "ansible-playbook"), str(play)]
    if inventory is not None:
        command[1:1] = ["-i", inventory]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def test_a_typo_in_one_file_of_an_inventory_folder_fails(tmp_path: Path) -> None:
    folder = tmp_path / "inventory"
    folder.mkdir()
    (folder / "good.yml").write_text("all:\n  hosts:\n    worker-a: {}\n")
    (folder / "typo.yml").write_text("all:\n  hosts:\n    worker-b:\n   worker-c:\n")
    run = ansible_inventory(folder, "--list")
    assert run.returncode != 0, "a broken file next to a good one was ignored"
    assert f"Completely failed to parse inventory source {folder / 'typo.yml'}" in run.stderr
    assert "YAML parsing failed" in run.stderr
    assert run.stderr.count("[ERROR]") == 1, run.stderr
    assert not [noise for noise in UNRELATED_PLUGINS if noise in run.stderr], run.stderr


def test_an_api_error_fails_the_playbook_with_the_plugins_reason(
    emulator: Emulator, tmp_path: Path
) -> None:
    source = emulator.source(tmp_path, projects=["no-viewer"])
    before = emulator.requests()
    result = playbook(str(source), tmp_path)
    assert result.returncode != 0, "the play ran on an inventory that could not be read"
    assert emulator.requests() - before == 1, "the TPU API was asked more than once"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("[WARNING]")]
    assert "the caller lacks permission tpu.nodes.list" in warnings[0], result.stderr
    assert len([w for w in warnings if "tpu.nodes.list" in w]) == 1, result.stderr
    assert result.stderr.count("[ERROR]") == 1, result.stderr
    assert not [noise for noise in UNRELATED_PLUGINS if noise in result.stderr], result.stderr
    assert "hello" not in result.stdout


def test_a_tpu_vm_config_under_another_name_is_refused_by_name(
    emulator: Emulator, tmp_path: Path
) -> None:
    source = emulator.source(tmp_path, name="pods.yml", projects=[PROJECT])
    before = emulator.requests()
    run = ansible_inventory(source, "--list")
    assert run.returncode != 0, run.stdout
    refused = f"'{source}' could not be verified by inventory plugin 'cloudtpu.pod.tpu_vm'"
    assert refused in run.stderr, run.stderr
    assert f"Completely failed to parse inventory source {source}" in run.stderr
    assert emulator.requests() == before


def test_a_tpu_vm_source_and_an_ini_file_in_one_folder(emulator: Emulator, tmp_path: Path) -> None:
    folder = tmp_path / "inventory"
    folder.mkdir()
    emulator.source(folder, name="tpu_vm.yml", projects=[PROJECT])
    (folder / "hosts.ini").write_text("[login]\nbastion ansible_host=10.128.0.9\n")
    before = emulator.requests()
    run = ansible_inventory(folder, "--list")
    assert run.returncode == 0, run.stderr
    assert emulator.requests() - before == 1
    assert run.hosts("tpu") == ["cfg-pod-w0", "cfg-pod-w1"]
    assert run.hosts("login") == ["bastion"]
    assert run.hostvars("bastion")["ansible_host"] == "10.128.0.9"
    assert run.hostvars("cfg-pod-w1")["tpu_worker_id"] == 1


def test_a_missing_inventory_path_fails(tmp_path: Path) -> None:
    result = playbook(str(tmp_path / "pods.tpu_vm.yml"), tmp_path)
    assert result.returncode != 0
    assert "Completely failed to parse inventory source" in result.stderr, result.stderr


def test_without_an_inventory_localhost_plays_still_run(tmp_path: Path) -> None:
    result = playbook(None, tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert '"msg": "hello"' in result.stdout


def test_gcp_inventory_takes_an_access_token_from_the_environment(emulator: Emulator) -> None:
    run = ansible_inventory(
        GCP,
        "--list",
        CLOUDTPU_PROJECT=PROJECT,
        CLOUDTPU_API_ENDPOINT=emulator.api_url,
        GCP_AUTH_KIND="accesstoken",
        GCP_ACCESS_TOKEN=TOKEN,
    )
    assert run.returncode == 0, run.stderr
    assert run.hosts("tpu_node_cfg_pod") == ["cfg-pod-w0", "cfg-pod-w1"]


def test_gcp_inventory_service_account_with_a_bad_key_file_says_so(
    emulator: Emulator, tmp_path: Path
) -> None:
    missing = tmp_path / "missing-key.json"
    run = ansible_inventory(
        GCP,
        "--list",
        CLOUDTPU_PROJECT=PROJECT,
        CLOUDTPU_API_ENDPOINT=emulator.api_url,
        GCP_AUTH_KIND="serviceaccount",
        GCP_SERVICE_ACCOUNT_FILE=str(missing),
    )
    assert run.returncode != 0
    assert f"cannot read service_account_file '{missing}'" in run.stderr, run.stderr
    assert "GCP_SERVICE_ACCOUNT_FILE" in run.stderr
    assert run.stderr.count("[ERROR]") == 1, run.stderr


@pytest.mark.parametrize(
    ("args", "env_user", "expected"),
    [((), "alice", "alice"), (("-u", "bob"), "alice", "bob")],
    ids=["ANSIBLE_REMOTE_USER", "-u"],
)
def test_gcp_inventory_leaves_the_user_to_ansible(
    emulator: Emulator, tmp_path: Path, args: tuple[str, ...], env_user: str, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GCP_"))}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_REMOTE_USER=env_user,
        USER="root",
        CLOUDTPU_PROJECT=PROJECT,
        CLOUDTPU_API_ENDPOINT=emulator.api_url,
        GCP_AUTH_KIND="accesstoken",
        GCP_ACCESS_TOKEN=TOKEN,
    )
    # debug runs on the control machine: nothing connects to the worker.
    command = [str(VENV_BIN / "ansible"), "-i", str(GCP), "cfg-pod-w0", *args, "-m", "debug"]
    # The connection's user, as Ansible exposes it to tasks, and the login contract's.
    shown = "{{ ansible_user | default('unset') }} {{ lookup('cloudtpu.pod.login', 'user') }}"
    command += ["-a", json.dumps({"msg": shown})]
    result = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f'"msg": "{expected} {expected}"' in result.stdout, result.stdout + result.stderr
