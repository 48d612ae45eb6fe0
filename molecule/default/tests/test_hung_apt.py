"""The shared apt step (cloudtpu.pod.apt) stops an apt run that hangs, and nothing else.

apt once hung for good on a worker: apt and its methods idle, waiting on each other, with no
connection open, and the step's retries never fired because nothing failed. Here a package
source of a scheme whose apt method never answers (`cloudtpu-stall://`) makes `apt-get update`
wait forever in the same way. The step must give up after its bound (tpu_apt_attempt_timeout,
30 s in apt_hang.yml), stop the processes of that apt run and no other (two decoys: a process
carrying another run's mark and one that carries none), and try once more.

- Once: the stalled method drops its source before it hangs, so the second attempt succeeds.
- Always: the source stays, the second attempt hangs too, and the step fails saying so, with
  no process of either attempt left behind.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

PACKAGE = "hello"
METHOD = "/usr/lib/apt/methods/cloudtpu-stall"
SOURCE = "/etc/apt/sources.list.d/cloudtpu-stall.list"
ONCE = "/run/cloudtpu-stall-once"
MARK = "CLOUDTPU_POD_APT_RUN"
# An apt method that never says its capabilities: apt waits for it for good. With the flag file
# present it first drops its own source, so only the first apt run hangs.
STALL = f"""#!/bin/sh
if [ -e {ONCE} ]; then rm -f {SOURCE}; fi
sleep 3600
"""
DECOYS = {
    "other run": f"{MARK}=00000000-0000-4000-8000-000000000000",
    "no mark": "CLOUDTPU_POD_TEST_DECOY=1",
}


def run_playbook() -> subprocess.CompletedProcess[str]:
    scenario = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    cmd = ["ansible-playbook", "-i", inventory, str(scenario / "apt_hang.yml")]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)


def marked(host) -> list[str]:
    """PIDs of processes whose environment carries an apt run's mark, the decoy's excepted."""
    out = host.run(
        f"for f in /proc/[0-9]*/environ; do grep -qsz '^{MARK}=' $f "
        f"&& ! grep -qszx '{DECOYS['other run']}' $f && echo $f; done"
    ).stdout
    return out.split()


def decoys_alive(host) -> dict[str, bool]:
    alive = {}
    for name, var in DECOYS.items():
        found = host.run(f"grep -lszx '{var}' /proc/[0-9]*/environ").stdout
        alive[name] = bool(found.strip())
    return alive


@pytest.fixture(scope="module")
def stall(host):
    host.run_test(f"printf %s {shlex.quote(STALL)} > {METHOD} && chmod 0755 {METHOD}")
    for var in DECOYS.values():
        host.run_test(f"setsid env {var} sleep 900 >/dev/null 2>&1 < /dev/null &")
    yield
    host.run(f"rm -f {METHOD} {SOURCE} {ONCE}; apt-get purge -y {PACKAGE}")
    host.run("pkill -f -x 'sleep 900'")


def with_stalled_source(host, once: bool) -> subprocess.CompletedProcess[str]:
    line = "deb [trusted=yes] cloudtpu-stall://stall.invalid/ bookworm main"
    host.run_test(f"echo '{line}' > {SOURCE}")
    host.run_test(f"{'touch' if once else 'rm -f'} {ONCE}")
    host.run(f"apt-get purge -y {PACKAGE}")
    return run_playbook()


def test_a_hang_once_is_stopped_and_the_step_tried_again(host, stall) -> None:
    run = with_stalled_source(host, once=True)
    output = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, output
    assert "apt run stopped: not done within 30s" in run.stdout, output
    # The stopped processes are named: at least the apt module's Python.
    assert re.search(r"^\s+\"\s+\d+ \S*python3", run.stdout, re.M), output
    status = host.run(f"dpkg-query -W -f='${{Status}}' {PACKAGE}").stdout
    assert status == "install ok installed", status
    assert marked(host) == [], "a process of the hung apt run was left running"
    assert decoys_alive(host) == {"other run": True, "no mark": True}
    assert host.run("apt-get check").rc == 0


def test_a_hang_twice_fails_saying_so_and_leaves_nothing(host, stall) -> None:
    run = with_stalled_source(host, once=False)
    output = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode != 0, output
    said = run.stdout + run.stderr  # a failure's message may go to either
    assert "apt did not finish within 30 s (tpu_apt_attempt_timeout 30" in said, output
    assert "in two attempts" in said, output
    assert marked(host) == [], "a process of a hung apt run was left running"
    assert decoys_alive(host) == {"other run": True, "no mark": True}
    assert host.run(f"dpkg-query -W -f='${{Status}}' {PACKAGE}").stdout != "install ok installed"
