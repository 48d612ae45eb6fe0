"""The shared apt step (cloudtpu.pod.apt) repairs an interrupted dpkg in every role, not only base.

The worker is left as a preemption in the middle of an upgrade leaves it: a package unpacked but
not configured, and a journal in /var/lib/dpkg/updates, so that apt refuses to run ("dpkg was
interrupted"). Then the remote_shell role runs (dpkg_repair.yml) and must finish the dpkg run
before it installs its own package; a second run changes nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import changed_count, changed_tasks

PACKAGE = "hello"
JOURNAL = "/var/lib/dpkg/updates/0000"


def run_playbook() -> subprocess.CompletedProcess[str]:
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    cmd = [
        "ansible-playbook",
        "-i",
        os.environ["MOLECULE_INVENTORY_FILE"],
        str(scenario / "dpkg_repair.yml"),
    ]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)


@pytest.fixture(scope="module")
def repaired(host):
    """Interrupt dpkg, run remote_shell twice; yield both runs."""
    host.run_test(f"cd /tmp && apt-get download {PACKAGE} && dpkg --unpack /tmp/{PACKAGE}_*.deb")
    host.run_test(f": > {JOURNAL}")
    refused = host.run("apt-get check")
    audit = host.run("dpkg --audit").stdout
    before = (refused, audit)
    first = run_playbook()
    second = run_playbook()
    yield before, first, second
    host.run(f"apt-get purge -y {PACKAGE}; rm -f /tmp/{PACKAGE}_*.deb")


def test_apt_refused_before_the_role_ran(repaired) -> None:
    (refused, audit), _, _ = repaired
    assert refused.rc != 0 and "dpkg was interrupted" in refused.stderr, refused.stderr
    assert PACKAGE in audit, audit


def test_remote_shell_finishes_the_interrupted_run(host, repaired) -> None:
    _, first, _ = repaired
    output = first.stdout[-4000:] + first.stderr[-2000:]
    assert first.returncode == 0, output
    assert "dpkg had been interrupted" in first.stdout, output
    assert f"Setting up {PACKAGE}" in first.stdout, output
    status = host.run(f"dpkg-query -W -f='${{Status}}' {PACKAGE}").stdout
    assert status == "install ok installed", status
    assert host.run("dpkg --audit").stdout.strip() == ""
    assert not host.file(JOURNAL).exists
    assert host.run("apt-get check").rc == 0


def test_second_run_changes_nothing(repaired) -> None:
    _, _, second = repaired
    assert second.returncode == 0, second.stdout[-3000:]
    assert changed_count(second) == 0, changed_tasks(second)
