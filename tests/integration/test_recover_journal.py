"""recover.yml's journal of node specs (cloudtpu.pod.tpu_journal): a create that fails after the
delete leaves the node's spec on the controller, and running the same command again creates the
node from it; --check writes nothing; a state folder that is a symbolic link is refused.
Against the emulator's in-memory backend, SSH and bootstrap skipped as in
test_lifecycle_playbooks.py."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    DEMO_INVENTORY,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    ansible_env,
    playbook,
)
from tests.integration.test_lifecycle_playbooks import with_base

EMULATOR_DELAY = 0.05  # seconds each operation of the emulator takes (conftest.py)
LOCATION = f"projects/{PROJECT}/locations/{ZONE}"
VALUES = {
    "tpu_provision_name": "pod-a",
    "tpu_provision_method": "node",
    "tpu_provision_labels": {"team": "vision"},
    "tpu_provision_metadata": {"startup-script": "echo hi"},
}
SPEC_KEYS = ("acceleratorType", "runtimeVersion", "labels", "metadata", "schedulingConfig")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def env(emulator: EmulatorCli, tmp_path: Path, state_dir: Path) -> dict[str, str]:
    emulator.admin("POST", "reset")
    return ansible_env(
        emulator.api_url,
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        CLOUDTPU_STATE_DIR=str(state_dir),
    )


def journal(state_dir: Path) -> Path:
    return state_dir / f"journal-{PROJECT}-{ZONE}.json"


def preempted_node(emulator: EmulatorCli, env: dict[str, str]) -> dict:
    assert playbook("provision.yml", env, *with_base(**VALUES)).returncode == 0
    before = emulator.node("pod-a")
    emulator.admin("POST", f"{LOCATION}/nodes/pod-a:preempt")
    return before


@pytest.mark.parametrize("error", ["PERMISSION_DENIED", 500])
def test_a_failed_create_is_finished_by_the_next_run_from_the_journal(
    emulator: EmulatorCli, env: dict[str, str], state_dir: Path, error: object
) -> None:
    before = preempted_node(emulator, env)
    # Every create fails during the first run (a 500 is looked at, then sent again: it fails
    # again); the next run's creates go through.
    rule = {"path": "projects/*/locations/*/nodes", "method": "POST", "error": error}
    emulator.admin("POST", "faults", {"rules": [rule]})
    command = with_base(tpu_recover_nodes="pod-a")

    failed = playbook("recover.yml", env, *command)
    assert failed.returncode != 0, failed.tail()
    assert emulator.node("pod-a") is None
    path = journal(state_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    entry = json.loads(path.read_text())["nodes"]["pod-a"]
    assert entry["step"] == "creating" and entry["project"] == PROJECT, entry
    assert entry["spec"]["accelerator_type"] == before["acceleratorType"]
    assert entry["spec"]["labels"] == {"team": "vision"}

    emulator.admin("POST", "faults", {"rules": []})
    again = playbook("recover.yml", env, *command)
    assert again.returncode == 0, again.tail()
    assert "pod-a: recreate" in again.output, again.tail()
    after = emulator.node("pod-a")
    assert after is not None and after["state"] == "READY"
    for key in SPEC_KEYS:
        assert after[key] == before[key], (key, before[key], after[key])
    assert not path.exists()


def test_a_recovery_stopped_before_its_workers_answered_is_finished_by_the_next_run(
    emulator: EmulatorCli, env: dict[str, str], state_dir: Path
) -> None:
    """The journal keeps a recreated node's spec until the run's last play: a run that stops
    after the create (here its workers never answer over SSH, as after a Ctrl-C or a lost
    connection there) leaves the entry, and the same command again bootstraps the READY node
    instead of refusing it as not lost."""
    before = preempted_node(emulator, env)
    stopped = playbook(
        "recover.yml",
        env,
        *with_base(
            tpu_recover_nodes="pod-a", tpu_recover_wait_for_ssh=True, tpu_recover_ssh_timeout=1
        ),
    )
    assert stopped.returncode != 0, stopped.tail()
    assert emulator.node("pod-a")["state"] == "READY"
    path = journal(state_dir)
    entry = json.loads(path.read_text())["nodes"]["pod-a"]
    assert entry["spec"]["labels"] == {"team": "vision"}, entry

    again = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a"))
    assert again.returncode == 0, again.tail()
    assert "pod-a: rebootstrap" in again.output, again.tail()
    assert emulator.node("pod-a")["acceleratorType"] == before["acceleratorType"]
    assert not path.exists()


def test_check_mode_on_a_journaled_missing_node_changes_and_writes_nothing(
    emulator: EmulatorCli, env: dict[str, str], state_dir: Path
) -> None:
    preempted_node(emulator, env)
    rule = {"path": "projects/*/locations/*/nodes", "method": "POST", "error": "PERMISSION_DENIED"}
    emulator.admin("POST", "faults", {"rules": [rule]})
    command = with_base(tpu_recover_nodes="pod-a")
    assert playbook("recover.yml", env, *command).returncode != 0
    emulator.admin("POST", "faults", {"rules": []})
    path = journal(state_dir)
    kept, kept_time = path.read_bytes(), path.stat().st_mtime_ns
    calls = emulator.mutating_calls()

    checked = playbook("recover.yml", env, *command, "--check")
    assert checked.returncode == 0, checked.tail()
    assert "pod-a: recreate" in checked.output, checked.tail()
    assert emulator.node("pod-a") is None
    assert emulator.mutating_calls() == calls
    assert path.read_bytes() == kept and path.stat().st_mtime_ns == kept_time
    assert sorted(os.listdir(state_dir)) == [path.name]


def test_a_node_neither_the_api_nor_the_journal_knows_is_refused(env: dict[str, str]) -> None:
    result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="nope"))
    assert result.returncode != 0
    assert "nope does not exist" in result.output, result.tail()
    assert "journal" in result.output and "no spec to recreate it from" in result.output


def test_a_state_folder_that_is_a_symbolic_link_is_refused(
    emulator: EmulatorCli, env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    state_dir.symlink_to(elsewhere)
    preempted_node(emulator, env)
    result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a"))
    assert result.returncode != 0
    assert f"symbolic link {state_dir}" in result.output, result.tail()
    assert "DELETE nodes.delete" not in emulator.mutating_calls()
    assert emulator.node("pod-a")["state"] == "PREEMPTED"
    assert os.listdir(elsewhere) == []


def test_a_run_stopped_with_ctrl_c_after_its_create_is_finished_by_the_next(
    tmp_path: Path, state_dir: Path
) -> None:
    """SIGINT (Ctrl-C) to ansible-playbook while the new node is coming up: the create went
    through, the journal still holds the spec. The same command again finds the node, waits
    for it and finishes the run (here without bootstrap, as everywhere in this file), and
    clears the entry; it neither refuses the node as healthy nor recreates it."""
    slow = EmulatorCli(backend="memory", delay=2.0).start()  # a create takes 2 s
    try:
        env = ansible_env(
            slow.api_url,
            ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
            CLOUDTPU_STATE_DIR=str(state_dir),
        )
        before = preempted_node(slow, env)
        command = [
            str(BIN / "ansible-playbook"),
            "-i",
            str(DEMO_INVENTORY),
            "playbooks/recover.yml",
            *with_base(tpu_recover_nodes="pod-a"),
        ]
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                node = slow.node("pod-a")
                if node is not None and node["state"] == "CREATING":
                    break
                assert proc.poll() is None, proc.communicate()[0].decode()[-3000:]
                time.sleep(0.05)
            else:
                pytest.fail("the new node never showed up as CREATING")
            proc.send_signal(signal.SIGINT)
            output = proc.communicate(timeout=120)[0].decode()
        finally:
            proc.kill()
        assert proc.returncode != 0, output[-3000:]
        entry = json.loads(journal(state_dir).read_text())["nodes"]["pod-a"]
        assert entry["step"] == "creating", entry

        again = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a"))
        assert again.returncode == 0, again.tail()
        assert re.search(r"pod-a: (maintenance|rebootstrap)", again.output), again.tail()
        after = slow.node("pod-a")
        assert after is not None and after["state"] == "READY"
        assert after["createTime"] == node["createTime"], "the node was created again"
        for key in SPEC_KEYS:
            assert after[key] == before[key], (key, before[key], after[key])
        assert not journal(state_dir).exists()
    finally:
        slow.stop()
