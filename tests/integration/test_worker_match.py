"""Every playbook that works on the TPU workers fails with one clear message when no worker
matched: an empty inventory (run, sync, logs, reset, verify) and a --limit that matches a host
outside group tpu. No pod needed: the check runs on this machine before any worker is
contacted (the message itself: plugins/filter/worker_match_problem.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.lifecycle_support import BIN, REPO, ansible_env

PLAYBOOKS = {
    "run.yml": ["-e", "cmd=hostname"],
    "sync.yml": ["-e", "tpu_sync_src=code"],
    "logs.yml": [],
    "reset.yml": [],
    "verify.yml": [],
}


def play(name: str, tmp_path: Path, inventory: str, *args: str) -> subprocess.CompletedProcess:
    source = tmp_path / "hosts.yml"
    source.write_text(inventory)
    (tmp_path / "code").mkdir(exist_ok=True)
    cmd = [str(BIN / "ansible-playbook"), "-i", str(source), str(REPO / "playbooks" / name)]
    cmd += [*PLAYBOOKS[name], *args]
    env = ansible_env("http://127.0.0.1:9/v2", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    return subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.mark.parametrize("name", list(PLAYBOOKS))
def test_an_inventory_without_workers_is_refused(name: str, tmp_path: Path) -> None:
    done = play(name, tmp_path, "all:\n  children:\n    tpu:\n      hosts: {}\n")
    assert done.returncode != 0, done.stdout[-2000:]
    expected = f"{name}: no TPU worker matched (group tpu has 0 hosts); check the inventory"
    assert expected in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("name", ["logs.yml", "reset.yml", "verify.yml"])
def test_a_limit_without_workers_is_refused(name: str, tmp_path: Path) -> None:
    inventory = (
        "all:\n  hosts:\n    box: {ansible_host: 192.0.2.1}\n"
        "  children:\n    tpu:\n      hosts:\n        pod-w0: {ansible_host: 192.0.2.2}\n"
    )
    done = play(name, tmp_path, inventory, "--limit", "box,localhost")
    assert done.returncode != 0, done.stdout[-2000:]
    assert f"{name}: no TPU worker matched (group tpu has 1 host, --limit box,localhost)" in (
        done.stdout
    ), done.stdout[-2000:]
