"""cloudtpu.pod.python runs the venv and rebuilds it when it is broken; framework refills it.

Runs after test_framework.py (file order) and leaves the worker converged again. Two breakages a
full disk leaves behind: pip half removed from site-packages, and an empty bin/python (the
symlink replaced by an empty file, so the system's interpreter is never touched). After each,
converge.yml (python, then framework) must rebuild the venv and install jax again; a further
converge changes nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import changed

USER = "tpu"
PYTHON = os.environ.get("CLOUDTPU_TEST_PYTHON") or "3.10"
VENV = f"/home/{USER}/.venv{PYTHON.replace('.', '')}"
BREAKAGES = {
    "pip-removed": f"rm -rf {VENV}/lib/python{PYTHON}/site-packages/pip",
    "python-empty": f"cd {VENV}/bin && rm -f python && : > python && chown {USER}: python",
}


def converge() -> subprocess.CompletedProcess[str]:
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = [
        "ansible-playbook",
        "-i",
        os.environ["MOLECULE_INVENTORY_FILE"],
        str(scenario / "converge.yml"),
    ]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)


def runs_with_pip(host) -> subprocess.CompletedProcess[str]:
    return host.run(f"runuser -u {USER} -- {VENV}/bin/python -c 'import sys, pip, jax'")


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_broken_venv_is_rebuilt_and_refilled(host, breakage: str) -> None:
    assert runs_with_pip(host).rc == 0, "the venv should be healthy before it is broken"
    host.run_test(BREAKAGES[breakage])
    assert runs_with_pip(host).rc != 0, f"{breakage} did not break the venv"
    result = converge()
    output = result.stdout[-5000:] + result.stderr[-2000:]
    assert result.returncode == 0, output
    assert re.search(rf"WARNING: the venv {re.escape(VENV)} is broken", result.stdout), output
    healthy = runs_with_pip(host)
    assert healthy.rc == 0, f"after the rebuild: {healthy.stderr}\n{output}"
    owner = host.file(f"{VENV}/pyvenv.cfg").user
    assert owner == USER, f"pyvenv.cfg belongs to {owner}"


def test_healthy_venv_changes_nothing() -> None:
    result = converge()
    assert result.returncode == 0, result.stdout[-4000:]
    assert changed(result) == 0, result.stdout[-4000:]
    assert "is broken" not in result.stdout
