"""status.yml against the emulator's in-memory backend, where the TPU API is the point: a
refused call (a bad token) is shown and fails the play, and the projects and zones come from
the inventory's tpu_vm source when no host is in the inventory (a preempted pod) and no
CLOUDTPU_PROJECT is set. Workers are never reached: every case has no inventory host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    PROJECT,
    TOKEN,
    ZONE,
    EmulatorCli,
    extra_vars,
    playbook,
    run,
    status_lines,
)

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleXRlc3RrZXl0ZXN0a2V5dGVzdGtleQ status"
POD = {
    "tpu_provision_project": PROJECT,
    "tpu_provision_zone": ZONE,
    "tpu_provision_name": "st",
    "tpu_provision_accelerator_type": "v4-16",
    "tpu_provision_method": "node",
    "tpu_provision_ssh_user": "tpu",
    "tpu_provision_ssh_public_key": KEY,
    "tpu_provision_wait_for_ssh": False,
    "tpu_provision_poll_interval": 0.1,
    "tpu_provision_known_hosts": "/dev/null",
}


@pytest.fixture(scope="module")
def emulator(emulator: EmulatorCli) -> EmulatorCli:
    """conftest.py's emulator, which from here on accepts only the demo inventory's token (the
    initial state too)."""
    state = emulator.admin("GET", "state")
    state["settings"]["tokens"] = [TOKEN]
    emulator.admin("POST", "state", state)
    return emulator


def test_a_refused_token_is_shown_and_fails_the_play(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    # The inventory reads the API with the token its file names; the modules with the one
    # in the environment, which the API refuses.
    result = playbook("status.yml", dict(env, CLOUDTPU_PROJECT=PROJECT, GCP_ACCESS_TOKEN="bad"))
    shown = status_lines(result)
    print(shown)
    assert result.returncode != 0, result.tail()
    assert shown.startswith(f"TPU API error for project {PROJECT}: "), shown
    assert "the access token was rejected or has expired" in shown, shown
    assert "the API did not answer: see the error above" in shown, shown
    assert "Fail when the TPU API could not be asked" in result.stdout, result.tail()
    assert result.recap()["localhost"]["changed"] == 0, result.recap()


def test_a_preempted_pod_is_found_through_the_inventory_source_without_cloudtpu_project(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    made = playbook("provision.yml", env, *extra_vars(POD))
    assert made.returncode == 0, made.tail()
    emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/st:preempt")
    # The demo inventory lists READY workers only, so it has no host now; its tpu_vm.yml
    # names the project. CLOUDTPU_PROJECT is not set (ansible_env drops it).
    assert "CLOUDTPU_PROJECT" not in env
    result = playbook("status.yml", env)
    shown = status_lines(result)
    print(shown)
    assert result.returncode == 0, result.tail()
    assert f"node st  type v4-16  {PROJECT}/{ZONE}  state PREEMPTED" in shown, shown
    assert shown.count("not in the inventory (node PREEMPTED)") == 2, shown
    assert result.recap()["localhost"]["changed"] == 0, result.recap()


def test_no_project_anywhere_says_where_it_looked(
    emulator: EmulatorCli, env: dict[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "hosts.yml"
    empty.write_text("all:\n  hosts: {}\n")
    result = run(
        [str(BIN / "ansible-playbook"), "-i", str(empty), "playbooks/status.yml"], env, 300
    )
    shown = status_lines(result)
    assert result.returncode == 0, result.tail()
    assert "Looked in: no project in the tpu_project of the inventory's hosts, no tpu_vm" in shown
