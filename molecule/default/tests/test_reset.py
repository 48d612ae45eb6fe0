"""playbooks/reset.yml on the worker (group tpu): keeps a held lock; ends the holder on request."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import LOCK

WORKER = "cloudtpu-default-w0"


def reset(*extra: str) -> str:
    playbook = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "playbooks" / "reset.yml"
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(playbook)]
    for item in extra:
        cmd += ["-e", item]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    return result.stdout


def summary(output: str) -> str:
    """The worker's line of the final summary."""
    lines = [ln.strip().strip('",') for ln in output.splitlines() if f'"{WORKER}: ' in ln]
    assert lines, output[-2500:]
    return lines[-1]


def test_reset_keeps_the_lock_of_a_busy_worker(host, device_holder) -> None:
    line = summary(reset())
    assert f"held by pid {device_holder} (tpu)" in line, line
    assert host.file(LOCK).exists, line
    assert host.run(f"kill -0 {device_holder}").rc == 0, "reset ended the holder unasked"


def test_reset_with_kill_ends_the_holder_and_removes_the_lock(host, device_holder) -> None:
    line = summary(reset("tpu_libtpu_kill=true", "tpu_libtpu_kill_grace=2"))
    assert f"removed {LOCK}" in line, line
    assert not host.file(LOCK).exists, line
    assert host.run(f"kill -0 {device_holder}").rc != 0, "the holder is still alive"
