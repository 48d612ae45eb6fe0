"""The inventories users already have, read with the repository's ansible.cfg (ansible-inventory
and ansible-playbook subprocesses; no emulator, no Docker).

- One pod of two workers written as INI (with and without the .ini extension), YAML, JSON, TOML
  and an executable inventory script: every format gives the same hosts, groups and variables.
- ansible-playbook -i hosts.ini runs a play on the INI file's [tpu] group, and the project's
  preflight (playbooks/preflight.yml) accepts its workers.
- A constructed config next to an INI file goes through the `auto` plugin.
- A source that no plugin can read still fails the run: a missing path, a malformed INI, YAML
  or TOML file. The warnings name the reason of the plugin meant for that kind of file; plugins
  that do not read it (host_list, script, toml for a file that is not .toml) stay silent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import VENV_BIN, InventoryRun, ansible_inventory
from tools.tpu_emulator.testing import REPO

WORKERS = ["pod-a-w0", "pod-a-w1"]
INI = """\
# The getting-started guide's format: a group, its hosts with variables, the group's variables.
[tpu]
pod-a-w0 ansible_host=10.130.0.2 tpu_worker_id=0
pod-a-w1 ansible_host=10.130.0.3 tpu_worker_id=1

[tpu:vars]
tpu_node=pod-a
tpu_worker_count=2
ansible_python_interpreter="{{ ansible_playbook_python }}"
"""
YAML = """\
all:
  children:
    tpu:
      hosts:
        pod-a-w0: {ansible_host: 10.130.0.2, tpu_worker_id: 0}
        pod-a-w1: {ansible_host: 10.130.0.3, tpu_worker_id: 1}
      vars: {tpu_node: pod-a, tpu_worker_count: 2}
"""
JSON_INVENTORY = {
    "tpu": {
        "hosts": {
            "pod-a-w0": {"ansible_host": "10.130.0.2", "tpu_worker_id": 0},
            "pod-a-w1": {"ansible_host": "10.130.0.3", "tpu_worker_id": 1},
        },
        "vars": {"tpu_node": "pod-a", "tpu_worker_count": 2},
    }
}
TOML = """\
[tpu.vars]
tpu_node = "pod-a"
tpu_worker_count = 2

[tpu.hosts.pod-a-w0]
ansible_host = "10.130.0.2"
tpu_worker_id = 0

[tpu.hosts.pod-a-w1]
ansible_host = "10.130.0.3"
tpu_worker_id = 1
"""
SCRIPT_OUTPUT = {
    "tpu": {"hosts": WORKERS, "vars": {"tpu_node": "pod-a", "tpu_worker_count": 2}},
    "_meta": {
        "hostvars": {
            "pod-a-w0": {"ansible_host": "10.130.0.2", "tpu_worker_id": 0},
            "pod-a-w1": {"ansible_host": "10.130.0.3", "tpu_worker_id": 1},
        }
    },
}
# Plugins that do not read the failing kinds of file below: they must not speak up.
UNRELATED = ("'host_list' plugin", "'script' plugin", "'toml' plugin")


def write(path: Path, text: str, executable: bool = False) -> Path:
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)
    return path


def script(path: Path) -> Path:
    """An executable inventory script (what AWX and AAP hand a job) printing SCRIPT_OUTPUT."""
    body = (
        f"#!{sys.executable}\nimport json, sys\n"
        f"print(json.dumps({SCRIPT_OUTPUT!r} if '--list' in sys.argv else {{}}))\n"
    )
    return write(path, body, executable=True)


SOURCES = {
    "hosts.ini": lambda folder: write(folder / "hosts.ini", INI),
    "hosts (INI, no extension)": lambda folder: write(folder / "hosts", INI),
    "hosts.yml": lambda folder: write(folder / "hosts.yml", YAML),
    "hosts.json": lambda folder: write(folder / "hosts.json", json.dumps(JSON_INVENTORY)),
    "hosts.toml": lambda folder: write(folder / "hosts.toml", TOML),
    "inventory.py (script)": lambda folder: script(folder / "inventory.py"),
}


def play_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GCP_"))}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update(ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_LOCALHOST_WARNING="false")
    return env


def playbook(
    inventory: Path, tmp_path: Path, play: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """PLAY, by default a play on the inventory's tpu group over a local connection: a module on
    every host and the variables the inventory gave it."""
    play = play or write(
        tmp_path / "workers.yml",
        "- name: Workers\n  hosts: tpu\n  connection: local\n  gather_facts: false\n"
        "  tasks:\n"
        "    - name: Reach each worker\n      ansible.builtin.ping:\n"
        "    - name: Show its place in the pod\n      ansible.builtin.debug:\n"
        '        msg: "{{ tpu_node }} worker {{ tpu_worker_id }} of {{ tpu_worker_count }}'
        ' at {{ ansible_host }}"\n',
    )
    command = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(play)]
    return subprocess.run(
        command,
        cwd=REPO,
        env=play_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("[WARNING]")]


@pytest.mark.parametrize("kind", list(SOURCES))
def test_every_format_gives_the_same_pod(tmp_path: Path, kind: str) -> None:
    source = SOURCES[kind](tmp_path)
    run = ansible_inventory(source, "--list")
    assert run.returncode == 0, run.stderr
    assert run.hosts() == WORKERS
    assert run.hosts("tpu") == WORKERS
    for worker_id, host in enumerate(WORKERS):
        hostvars = run.hostvars(host)
        expected = {
            "ansible_host": f"10.130.0.{worker_id + 2}",
            "tpu_worker_id": worker_id,
            "tpu_node": "pod-a",
            "tpu_worker_count": 2,
        }
        assert {key: hostvars.get(key) for key in expected} == expected, hostvars
    assert not warnings(run.stderr), run.stderr


def test_a_play_runs_on_the_tpu_group_of_an_ini_inventory(tmp_path: Path) -> None:
    result = playbook(SOURCES["hosts.ini"](tmp_path), tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    for worker_id in range(len(WORKERS)):
        assert f'"msg": "pod-a worker {worker_id} of 2 at 10.130.0.{worker_id + 2}"' in (
            result.stdout
        ), result.stdout
    recap = result.stdout[result.stdout.index("PLAY RECAP") :]
    for host in WORKERS:
        line = next(line for line in recap.splitlines() if line.startswith(host))
        assert "ok=2" in line and "failed=0" in line and "unreachable=0" in line, recap


def test_the_preflight_accepts_the_workers_of_an_ini_inventory(tmp_path: Path) -> None:
    # Its message sends users to "a static inventory whose workers are in group 'tpu'".
    inventory = SOURCES["hosts.ini"](tmp_path)
    result = playbook(inventory, tmp_path, REPO / "playbooks" / "preflight.yml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "PLAY [Preflight | workers]" in result.stdout, result.stdout
    assert all(f"(item={host})" in result.stdout for host in WORKERS), result.stdout
    assert "failed=0" in result.stdout and "failed=1" not in result.stdout, result.stdout


def test_a_constructed_config_next_to_an_ini_file_goes_through_auto(tmp_path: Path) -> None:
    ini = SOURCES["hosts.ini"](tmp_path)
    groups = write(
        tmp_path / "groups.yml",
        "plugin: ansible.builtin.constructed\nstrict: true\n"
        "groups:\n  tpu_coordinator: tpu_worker_id == 0\n"
        "compose:\n  tpu_internal_ip: ansible_host\n",
    )
    run = ansible_inventory(ini, "-i", str(groups), "--list")
    assert run.returncode == 0, run.stderr
    assert run.hosts("tpu_coordinator") == ["pod-a-w0"]
    assert run.hostvars("pod-a-w1")["tpu_internal_ip"] == "10.130.0.3"
    assert not warnings(run.stderr), run.stderr


def failing(tmp_path: Path, name: str, text: str | None) -> InventoryRun:
    source = tmp_path / name
    if text is not None:
        write(source, text)
    run = ansible_inventory(source, "--list")
    assert run.returncode != 0, f"{name} was read as an inventory: {run.stdout}"
    assert f"Completely failed to parse inventory source {source}" in run.stderr, run.stderr
    assert run.stderr.count("[ERROR]") == 1, run.stderr
    own = f"'{source.suffix.lstrip('.')}' plugin"
    assert not [noise for noise in UNRELATED if noise in run.stderr and noise != own], run.stderr
    return run


def test_a_missing_ini_path_fails(tmp_path: Path) -> None:
    run = failing(tmp_path, "hosts.ini", None)
    assert not warnings(run.stderr), run.stderr


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        (
            "hosts.ini",
            "[tpu\npod-a-w0\n",
            "Failed to parse inventory with 'ini' plugin",
        ),
        (
            "hosts.ini",
            "[tpu]\npod-a-w0 tpu_worker_id\n",
            "Expected key=value host variable assignment, got: tpu_worker_id",
        ),
        (
            "hosts.yml",
            "all:\n  hosts:\n    pod-a-w0:\n   pod-a-w1:\n",
            "YAML parsing failed",
        ),
        (
            "hosts.yml",
            "- pod-a-w0\n- pod-a-w1\n",
            "YAML inventory has invalid structure",
        ),
        (
            "hosts.toml",
            "[tpu.hosts.pod-a-w0\n",
            "Failed to parse inventory with 'toml' plugin",
        ),
    ],
    ids=["ini-section", "ini-variable", "yaml-indent", "yaml-list", "toml"],
)
def test_a_malformed_file_fails_with_its_own_reason(
    tmp_path: Path, name: str, text: str, reason: str
) -> None:
    run = failing(tmp_path, name, text)
    assert [line for line in warnings(run.stderr) if reason in line], run.stderr


def test_a_malformed_ini_file_stops_the_playbook(tmp_path: Path) -> None:
    inventory = write(tmp_path / "hosts.ini", "[tpu\npod-a-w0\n")
    result = playbook(inventory, tmp_path)
    assert result.returncode != 0, result.stdout
    assert f"Completely failed to parse inventory source {inventory}" in result.stderr
    assert "PLAY [Workers]" not in result.stdout, result.stdout
