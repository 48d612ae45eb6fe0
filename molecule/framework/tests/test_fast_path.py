"""The converged fast path of the framework and tcmalloc roles (cloudtpu.pod.tpu_state), on the
worker that converge and molecule's idempotence step left.

Runs first (file order) and leaves the worker converged again:
1. a converged worker: each role costs its argument spec, one task that checks its variables
   and looks at its state, and the skipped include of its tasks (3 tasks), and nothing changes;
2. drift behind the records' back: framework.env edited, a package uninstalled from the venv
   as the login user, TCMalloc preloaded again in /etc/environment. `--check --diff` sends both
   roles through their tasks, shows each change and changes nothing;
3. the next run repairs all three, and the run after it takes the fast path again.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import changed, tasks

USER = "tpu"
PYTHON = os.environ.get("CLOUDTPU_TEST_PYTHON") or "3.10"
VENV = f"/home/{USER}/.venv{PYTHON.replace('.', '')}"
ENV_FILE = f"{VENV}/framework.env"
UV = "/opt/cloudtpu/uv/bin/uv"
PACKAGE = "opt_einsum"
PRELOAD = 'LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"'
DISABLED = "# cloudtpu.pod tcmalloc disabled: " + PRELOAD
# Each role's include of its tasks, skipped on a converged worker.
INCLUDES = {
    "framework": "Bring the worker to the role's state where it differs from the record",
    "tcmalloc": (
        "Find, disable, keep or restore the preload where the worker differs from the record"
    ),
}


def converge(*options: str) -> subprocess.CompletedProcess[str]:
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], *options]
    cmd.append(str(scenario / "converge.yml"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    return result


def fast(result: subprocess.CompletedProcess[str], role: str) -> bool:
    """The role's state check found the worker converged: its tasks' include was skipped."""
    return (INCLUDES[role], "skipping") in tasks(result, role)


def assert_fast(result: subprocess.CompletedProcess[str]) -> None:
    assert changed(result) == 0, result.stdout[-4000:]
    for role in INCLUDES:
        seen = tasks(result, role)
        assert fast(result, role) and len(seen) == 3, (role, seen)


def as_user(host, command: str):
    return host.run(f"runuser -u {USER} -- {command}")


def has_package(host) -> bool:
    return as_user(host, f"{VENV}/bin/python -c 'import {PACKAGE}'").rc == 0


@pytest.fixture(scope="module")
def drifted(host):
    """The worker as converge left it, then changed behind the records' back."""
    before = converge()
    host.run_test(f"echo DRIFT=1 >> {ENV_FILE}")
    host.run_test(f"runuser -u {USER} -- {UV} pip uninstall --python {VENV}/bin/python {PACKAGE}")
    host.run_test(f"echo '{PRELOAD}' >> /etc/environment")
    assert not has_package(host)
    return before


def test_a_converged_worker_costs_each_role_four_tasks(drifted) -> None:
    assert_fast(drifted)


def test_check_mode_shows_the_drift_and_changes_nothing(host, drifted) -> None:
    result = converge("--check", "--diff")
    out = result.stdout
    assert not fast(result, "framework") and not fast(result, "tcmalloc"), out[-4000:]
    # tpu_framework_env is set here, so the env file's diff is not shown (no_log): its task is
    # reported changed.
    assert ("Write the environment file framework.env into the venv", "changed") in tasks(
        result, "framework"
    ), out[-4000:]
    assert re.search(rf"\+ {PACKAGE.replace('_', '[-_]')}==", out, re.I), out[-4000:]
    assert "+" + DISABLED in out, out[-4000:]
    assert "DRIFT=1" in host.file(ENV_FILE).content_string
    assert not has_package(host)
    assert PRELOAD in host.file("/etc/environment").content_string.splitlines()


def test_the_next_run_repairs_the_drift_then_the_fast_path_returns(host, drifted) -> None:
    repaired = converge()
    assert changed(repaired) >= 3, repaired.stdout[-4000:]
    assert "DRIFT=1" not in host.file(ENV_FILE).content_string
    assert has_package(host)
    lines = host.file("/etc/environment").content_string.splitlines()
    assert DISABLED in lines and PRELOAD not in lines, lines
    backup = host.file("/etc/cloudtpu/tcmalloc.orig").content_string.splitlines()
    kept = [json.loads(line) for line in backup if line.startswith("{")]
    assert {"file": "/etc/environment", "kind": "environment", "line": PRELOAD} in kept, backup
    assert_fast(converge())
