"""Helpers for the default scenario's tests: SSH logins as the login user, re-converging.

The tests run in file order: test_default.py checks what converge left; test_dpkg_lock.py
holds the dpkg lock while base runs; test_modes.py then
re-converges with other modes (framework, then restore) and checks each; test_reset.py runs
playbooks/reset.yml. After a verify run the worker is in the restored state: converge again
before verifying again.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

LIBRARY = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
# The global preloads prepare.yml sets up: (file, line, kind as tcmalloc-scan names it).
ORIGINAL_LINE = f'LD_PRELOAD="{LIBRARY}"'
PRELOADS = [
    ("/etc/environment", ORIGINAL_LINE, "environment"),
    ("/etc/profile.d/tpu-tcmalloc.sh", f'    export LD_PRELOAD="{LIBRARY}"', "shell"),
    ("/etc/ld.so.preload", LIBRARY, "preload"),
]
# A login shell without what pam_env set, so that only /etc/profile.d can bring LD_PRELOAD back.
LOGIN_SHELL_ENV = "unset LD_PRELOAD; bash -lc env"
MARKER = "# cloudtpu.pod tcmalloc disabled: "
# libtpu's fixed paths, inside the test container.
LOCK = "/tmp/libtpu_lockfile"
LOGS = "/tmp/tpu_logs"
# A stand-in TPU device: a plain file where a v4 worker has its first device. The container's
# /dev is its own tmpfs, so nothing outside the container is touched.
DEVICE = "/dev/accel0"
SSH = (
    "ssh -i /root/.ssh/id_ed25519 -o BatchMode=yes -o StrictHostKeyChecking=accept-new "
    "-o ConnectTimeout=10 tpu@127.0.0.1"
)


def login(host, command: str) -> str:
    """Run `command` in a new SSH login session of the user tpu; return its output."""
    result = host.run(f"{SSH} {shlex.quote(command)}")
    assert result.rc == 0, f"ssh {command!r} failed ({result.rc}): {result.stderr}"
    return result.stdout


_RUNS: dict[tuple, subprocess.CompletedProcess[str]] = {}


def su_login(host, command: str) -> str:
    """`command` in a PAM login session of tpu through su (pam_env, profile) instead of SSH.

    For the restored state: with TCMalloc back in /etc/ld.so.preload, sshd's sessions die in
    this image, so SSH cannot show what a login gets there.
    """
    result = host.run(f"su - tpu -c {shlex.quote(command)}")
    assert result.rc == 0, f"su -c {command!r} failed ({result.rc}): {result.stderr}"
    return result.stdout


def run_converge(tags: str, *options: str, **extra_vars: str) -> subprocess.CompletedProcess[str]:
    """Run the scenario's converge.yml, only the roles tagged `tags`, with extra variables and
    more ansible-playbook options (--check, --diff)."""
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--tags", tags]
    cmd += options
    for name, value in extra_vars.items():
        cmd += ["-e", f"{name}={value}"]
    cmd.append(str(scenario / "converge.yml"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)


def converge(tags: str, **extra_vars: str) -> subprocess.CompletedProcess[str]:
    """run_converge that must succeed.

    Callers run the same variables twice on purpose (idempotence), so results are not cached;
    a failed run is remembered, so that the tests depending on it fail at once.
    """
    key = (tags, *sorted(extra_vars.items()))
    failed = _RUNS.get(key)
    if failed is not None:
        pytest.fail(f"converge with {extra_vars} failed before:\n{failed.stdout[-3000:]}")
    result = run_converge(tags, **extra_vars)
    if result.returncode != 0:
        _RUNS[key] = result
        pytest.fail(
            f"converge --tags {tags} {extra_vars} failed:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
        )
    return result


def changed_count(result: subprocess.CompletedProcess[str]) -> int:
    """`changed=` of the play recap."""
    return recap(result)["changed"]


def recap(result: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The worker's counts in the play recap (ok, changed, skipped, ...)."""
    line = result.stdout.split("PLAY RECAP")[-1]
    counts = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}
    assert "changed" in counts, result.stdout[-2000:]
    return counts


def changed_tasks(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Names of the tasks that reported a change, for failure messages."""
    tasks, current = [], ""
    for line in result.stdout.splitlines():
        if line.startswith("TASK ["):
            current = line
        elif line.startswith("changed:"):
            tasks.append(current)
    return tasks


@pytest.fixture
def device_holder(host):
    """A Python program of the user tpu holding the stand-in TPU device open, and a lock file."""
    host.run_test(f"touch {DEVICE} && chmod 0644 {DEVICE} && touch {LOCK}")
    holder = f"import time; device = open('{DEVICE}'); time.sleep(600)"
    host.run_test(
        f"runuser -u tpu -- setsid python3 -c {shlex.quote(holder)} </dev/null >/dev/null 2>&1 &"
    )
    pid = host.run_test("sleep 1; pgrep -u tpu -f 'time.sleep.600'").stdout.split()[0]
    yield int(pid)
    host.run(f"kill -9 {pid}")
    host.run(f"rm -rf {DEVICE} {LOCK}")
