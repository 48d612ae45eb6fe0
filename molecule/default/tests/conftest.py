"""Helpers for the default scenario's tests: SSH logins as the login user, re-converging.

The tests run in file order: test_default.py checks what converge left; test_modes.py then
re-converges with other modes (framework, then restore) and checks each. After a verify run
the worker is in the restored state: converge again before verifying again.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

LIBRARY = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
ORIGINAL_LINE = f'LD_PRELOAD="{LIBRARY}"'
MARKER = "# cloudtpu.pod tcmalloc disabled: "
# Paths inside the test container: libtpu's fixed ones, and a folder of fake TPU devices.
LOCK = "/tmp/libtpu_lockfile"  # noqa: S108
LOGS = "/tmp/tpu_logs"  # noqa: S108
FAKE_DEVICES = "/tmp/fakedev"  # noqa: S108
SSH = (
    "ssh -i /root/.ssh/id_ed25519 -o BatchMode=yes -o StrictHostKeyChecking=accept-new "
    "-o ConnectTimeout=10 tpu@127.0.0.1"
)


def login(host, command: str) -> str:
    """Run `command` in a new SSH login session of the user tpu; return its output."""
    result = host.run(f"{SSH} {shlex.quote(command)}")
    assert result.rc == 0, f"ssh {command!r} failed ({result.rc}): {result.stderr}"
    return result.stdout


def converge(**extra_vars: str) -> subprocess.CompletedProcess[str]:
    """Run the scenario's converge.yml again with extra variables (molecule's inventory)."""
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"]]
    for key, value in extra_vars.items():
        cmd += ["-e", f"{key}={value}"]
    cmd.append(str(scenario / "converge.yml"))
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout[-4000:]}"
    return result


def changed_count(result: subprocess.CompletedProcess[str]) -> int:
    """`changed=` of the play recap."""
    match = re.search(r"changed=(\d+)", result.stdout.split("PLAY RECAP")[-1])
    assert match, result.stdout[-2000:]
    return int(match.group(1))


def changed_tasks(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Names of the tasks that reported a change, for failure messages."""
    tasks, current = [], ""
    for line in result.stdout.splitlines():
        if line.startswith("TASK ["):
            current = line
        elif line.startswith("changed:"):
            tasks.append(current)
    return tasks


@pytest.fixture(scope="session")
def ssh_login():
    return login
