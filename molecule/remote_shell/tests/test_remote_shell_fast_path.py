"""remote_shell's converged fast path (cloudtpu.pod.tpu_state) on the worker converge left (runs
after test_remote_shell.py): a converged worker takes it; a package removed and the locale
default edited send the role through its tasks, which repair both, and the fast path comes back.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

FAST = "Bring the worker to the role's state where it differs from the record"


def converge() -> str:
    """The scenario's converge.yml, as molecule runs it; its output."""
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"]]
    cmd.append(str(scenario / "converge.yml"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    return result.stdout


def took_fast_path(out: str) -> bool:
    """The include of the role's tasks was skipped: the worker was found converged."""
    lines = out.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("TASK [cloudtpu.pod.remote_shell : " + FAST):
            return any(later.startswith("skipping:") for later in lines[index + 1 : index + 4])
    raise AssertionError(f"no task {FAST!r} in:\n{out[-3000:]}")


def changed(out: str) -> int:
    found = re.findall(r"^\S+\s+:\s+ok=\d+\s+changed=(\d+)", out, re.M)
    assert found, out[-2000:]
    return sum(int(count) for count in found)


def test_a_converged_worker_takes_the_fast_path() -> None:
    out = converge()
    assert took_fast_path(out)
    assert changed(out) == 0


def test_drift_is_repaired_then_the_fast_path_returns(host) -> None:
    host.run_test("DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq mosh")
    host.run_test("sed -i 's/^LANG=.*/LANG=C/' /etc/default/locale")
    repaired = converge()
    assert not took_fast_path(repaired)
    assert changed(repaired) >= 2
    assert host.package("mosh").is_installed
    assert "LANG=en_US.UTF-8" in host.file("/etc/default/locale").content_string.splitlines()
    again = converge()
    assert took_fast_path(again)
    assert changed(again) == 0
