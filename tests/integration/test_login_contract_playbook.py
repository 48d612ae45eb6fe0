"""The login and pod contracts as a play sees them, with the state a user's machine has.

A fact cache left by site.yml (gathered under become: user_dir=/root, user_id=root) is put in
place first, with the repository's own cache settings (jsonfile, gathering=smart): the
lookups must answer from the connection user, not from that cache. The hosts use the local
connection so no pod is needed; what is checked is where the answer comes from.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.playbook_helpers import LOCAL_PYTHON, playbook_env, run_playbook

PLAY = """
- hosts: tpu
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Write down what the contracts say for this host
      ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        content: "{{ {'login': login, 'pod': pod} | to_json }}"
        mode: "0600"
      vars:
        login: "{{ lookup('cloudtpu.pod.login') }}"
        pod: "{{ lookup('cloudtpu.pod.pod') }}"
"""


def _inventory(tmp: Path) -> Path:
    hosts = {
        "w0": {"tpu_node": "p", "tpu_worker_id": 0, "tpu_internal_ip": "10.0.0.2"},
        "w1": {"tpu_node": "p", "tpu_worker_id": 1, "tpu_internal_ip": "10.0.0.3"},
    }
    for hv in hosts.values():
        hv.update({"ansible_connection": "local", **LOCAL_PYTHON})
    path = tmp / "inventory.json"
    path.write_text(json.dumps({"tpu": {"hosts": hosts}}))
    return path


def _poisoned_cache(tmp: Path) -> Path:
    cache = tmp / "facts"
    cache.mkdir()
    for host in ("w0", "w1"):
        (cache / host).write_text(
            json.dumps(
                {
                    "ansible_user_dir": "/root",
                    "ansible_user_id": "root",
                    "ansible_env": {"HOME": "/root", "USER": "root", "SUDO_USER": "root"},
                    "module_setup": True,
                }
            )
        )
    return cache


def _run(tmp: Path, *args: str, **env: str) -> dict[str, dict]:
    play = tmp / "play.yml"
    play.write_text(PLAY)
    environment = playbook_env(
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(_poisoned_cache(tmp)),
        ANSIBLE_GATHERING="smart",
        **env,
    )
    (tmp / "out").mkdir()
    result = run_playbook(play, _inventory(tmp), "-e", f"out={tmp / 'out'}", *args, env=environment)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    seen: dict[str, dict] = {}
    for host in ("w0", "w1"):
        seen[host] = json.loads((tmp / "out" / f"{host}.json").read_text())
    return seen


def test_remote_user_wins_over_a_cache_gathered_under_become(tmp_path: Path) -> None:
    seen = _run(tmp_path, ANSIBLE_REMOTE_USER="tpu")
    for host in ("w0", "w1"):
        login = seen[host]["login"]
        assert login["user"] == "tpu", login
        assert login["home"] == "/home/tpu", login
        assert login["runs_dir"] == "/home/tpu/cloudtpu-runs", login
        assert login["venv"] == "/home/tpu/.venv310", login


def test_explicit_variables_and_a_custom_venv(tmp_path: Path) -> None:
    seen = _run(
        tmp_path,
        "-e",
        "tpu_login_user=alice",
        "-e",
        "tpu_venv_path=/opt/venvs/jax",
        "-e",
        "tpu_python_version=3.11",
        ANSIBLE_REMOTE_USER="tpu",
    )
    login = seen["w1"]["login"]
    assert (login["user"], login["source"], login["venv"]) == (
        "alice",
        "tpu_login_user",
        "/opt/venvs/jax",
    )


def test_pod_of_a_static_inventory(tmp_path: Path) -> None:
    seen = _run(tmp_path, ANSIBLE_REMOTE_USER="tpu")
    assert seen["w1"]["pod"] == {
        "node": "p",
        "worker_id": 1,
        "coordinator": "w0",
        "coordinator_ip": "10.0.0.2",
        "jax_coordinator_address": "10.0.0.2:8476",
        "hosts": ["w0", "w1"],
        "ips": ["10.0.0.2", "10.0.0.3"],
        # one node of its own is a job of one slice, coordinated by its worker 0
        "queued_resource": "",
        "slice_id": 0,
        "num_slices": 1,
        "job_coordinator": "w0",
        "job_coordinator_ip": "10.0.0.2",
    }
