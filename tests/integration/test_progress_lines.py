"""Long waits print what they see as they wait, with no ansible.cfg (as for a user of the
installed collection): provision.yml against a slow operation prints the node's state at least
once per poll interval, while it waits; teardown.yml prints the node's state as it goes;
cloudtpu.pod.job_wait (verify.yml's wait for its checks) prints a line per poll while a job runs.

Each line is timed as it reaches ansible-playbook's stdout, so the test proves the lines come
during the wait, not in one block at the end of the task."""

from __future__ import annotations

import itertools
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    DEMO_INVENTORY,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
)

EMULATOR_DELAY = 4.0  # seconds each operation of the emulator takes (conftest.py)
POLL = 0.5  # provision's poll interval
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleXRlc3RrZXl0ZXN0a2V5dGVzdGtleQ progress"
LINE = re.compile(r"^(?P<name>[\w.-]+): (?P<state>[\w -]+) \((?P<seconds>\d+) s\)$")


@pytest.fixture
def env(emulator: EmulatorCli, tmp_path: Path) -> dict[str, str]:
    """No ansible.cfg: the collection found on the collections path, as once installed; the
    default callback only (none of the project's timing callbacks)."""
    emulator.admin("POST", "reset")
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n", encoding="utf-8")
    return ansible_env(
        emulator.api_url,
        ANSIBLE_CONFIG=str(config),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_STDOUT_CALLBACK="default",
    )


def timed_run(cmd: list[str], env: dict[str, str], timeout: float = 300) -> list[tuple[float, str]]:
    """Run ``cmd``; every stdout line with the second it arrived at. Fails on a non-zero exit."""
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append((time.monotonic() - started, line.rstrip("\n")))
        assert time.monotonic() - started < timeout, "\n".join(text for _, text in lines)
    proc.wait(timeout=30)
    output = "\n".join(text for _, text in lines)
    assert proc.returncode == 0, output[-6000:]
    return lines


def progress(lines: list[tuple[float, str]], name: str) -> list[tuple[float, str, int]]:
    """(arrival, state, seconds) of the progress lines of ``name``."""
    found = []
    for arrived, text in lines:
        match = LINE.match(text.strip())
        if match and match["name"] == name:
            found.append((arrived, match["state"], int(match["seconds"])))
    return found


def arrival(lines: list[tuple[float, str]], start: str) -> float:
    return next(at for at, text in lines if text.startswith(start))


def provision_vars(**more: Any) -> list[str]:
    values = {
        "tpu_provision_project": PROJECT,
        "tpu_provision_zone": ZONE,
        "tpu_provision_name": "slow",
        "tpu_provision_method": "node",
        "tpu_provision_accelerator_type": "v4-8",
        "tpu_provision_ssh_user": "tpu",
        "tpu_provision_ssh_public_key": KEY,
        "tpu_provision_wait_for_ssh": False,
        "tpu_provision_known_hosts": "/dev/null",
        "tpu_provision_poll_interval": POLL,
        "tpu_teardown_poll_interval": POLL,
        "tpu_teardown_confirm": True,
    }
    values.update(more)
    return extra_vars(values)


def test_provision_of_a_slow_node_prints_its_state_at_every_poll_as_it_waits(
    env: dict[str, str],
) -> None:
    playbook = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY)]
    lines = timed_run([*playbook, "playbooks/provision.yml", *provision_vars()], env)
    seen = progress(lines, "slow")
    creating = [line for line in seen if line[1] == "CREATING"]
    # EMULATOR_DELAY seconds of CREATING, a read every POLL seconds: a line for (nearly) every poll
    assert len(creating) >= EMULATOR_DELAY / POLL * 0.6, seen
    assert seen[-1][1] == "READY", seen
    # never more than about a poll interval between two lines, as they arrive on the terminal
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert max(gaps) < POLL + 1.5, gaps
    # they arrive while the task runs, not with its result
    done = arrival(lines, "changed: [localhost]")
    assert creating[0][0] < done - EMULATOR_DELAY / 2, (creating, done)

    lines = timed_run([*playbook, "playbooks/teardown.yml", *provision_vars()], env)
    seen = progress(lines, "slow")
    deleting = [line for line in seen if line[1] == "DELETING"]
    assert len(deleting) >= EMULATOR_DELAY / POLL * 0.6, seen
    assert seen[-1][1] == "gone", seen


def test_a_queued_request_prints_its_state_at_every_poll_as_it_waits(
    env: dict[str, str],
) -> None:
    playbook = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY)]
    spot = {
        "tpu_provision_name": "slowq",
        "tpu_provision_method": "auto",
        "tpu_provision_spot": True,
    }
    lines = timed_run([*playbook, "playbooks/provision.yml", *provision_vars(**spot)], env)
    seen = progress(lines, "slowq")
    assert len(seen) >= EMULATOR_DELAY / POLL * 0.6, seen
    assert seen[-1][1] == "ACTIVE", seen
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert max(gaps) < POLL + 1.5, gaps

    lines = timed_run([*playbook, "playbooks/teardown.yml", *provision_vars(**spot)], env)
    assert progress(lines, "slowq")[-1][1] == "gone", lines[-40:]


def test_job_wait_prints_a_line_per_poll_while_the_job_runs(
    env: dict[str, str], tmp_path: Path
) -> None:
    play = tmp_path / "job.yml"
    play.write_text(
        """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Start a job
      ansible.builtin.command: sleep 8
      async: 60
      poll: 0
      register: job
    - name: Wait for it
      cloudtpu.pod.job_wait:
        jid: "{{ job.ansible_job_id }}"
        label: sleep
        poll: 1
        timeout: 60
    - name: Collect it
      ansible.builtin.async_status:
        jid: "{{ job.ansible_job_id }}"
      register: result
      failed_when: not result.finished or result.rc != 0
""",
        encoding="utf-8",
    )
    lines = timed_run([str(BIN / "ansible-playbook"), str(play)], env)
    seen = progress(lines, "localhost")
    assert len(seen) >= 2 and {state for _, state, _ in seen} == {"sleep running"}, lines
    # A poll is a second's wait plus a run of async_status on this machine, which takes up to
    # two seconds more on a busy one (the job runs 8 s so that a slow start still leaves polls).
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert max(gaps) < 1 + 3, gaps


def test_ssh_wait_prints_a_line_per_poll_while_the_host_does_not_answer(
    env: dict[str, str], tmp_path: Path
) -> None:
    # A worker whose sshd is not up yet: a local port that refuses connections.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    silent-w0:\n"
        f"      ansible_host: 127.0.0.1\n      ansible_port: {port}\n",
        encoding="utf-8",
    )
    play = tmp_path / "ssh.yml"
    play.write_text(
        """
- hosts: silent-w0
  gather_facts: false
  tasks:
    - name: Wait for SSH
      cloudtpu.pod.ssh_wait:
        timeout: 5
        sleep: 1
        poll: 1
      register: waited
      ignore_errors: true
    - name: It gave up, saying why
      ansible.builtin.assert:
        that:
          - waited is failed
          - "'no answer over its connection after 5 s' in waited.msg"
      delegate_to: localhost
""",
        encoding="utf-8",
    )
    lines = timed_run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(play)], env)
    seen = progress(lines, "silent-w0")
    assert len(seen) >= 2 and {state for _, state, _ in seen} == {"no SSH answer yet"}, lines
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert max(gaps) < 2.5, gaps
