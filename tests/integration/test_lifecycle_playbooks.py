"""provision.yml, teardown.yml and recover.yml against the emulator's in-memory backend:
preflight refusals, the queued resource path, check mode, the recreate-from-spec logic and the
progress lines of the wait for a node under maintenance.

The in-memory backend hands out addresses nobody answers on, so these runs skip the SSH wait
and the bootstrap (tpu_*_wait_for_ssh=false, tpu_recover_bootstrap=false); the Docker test
(test_lifecycle_docker.py) covers them for real.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lifecycle_support import (
    PROJECT,
    ZONE,
    EmulatorCli,
    extra_vars,
    inventory,
    playbook,
    run,
)

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleXRlc3RrZXl0ZXN0a2V5dGVzdGtleQ lifecycle"
BASE = {
    "tpu_provision_project": PROJECT,
    "tpu_provision_zone": ZONE,
    "tpu_provision_accelerator_type": "v4-16",
    "tpu_provision_ssh_user": "tpu",
    "tpu_provision_ssh_public_key": KEY,
    "tpu_provision_wait_for_ssh": False,
    "tpu_provision_poll_interval": 0.1,
    "tpu_teardown_poll_interval": 0.1,
    "tpu_recover_poll_interval": 0.1,
    "tpu_recover_wait_for_ssh": False,
    "tpu_recover_bootstrap": False,
    "tpu_recover_ssh_config": False,
}


def with_base(**values: Any) -> list[str]:
    merged = dict(BASE)
    merged["tpu_provision_known_hosts"] = "/dev/null"
    merged["tpu_recover_known_hosts"] = "/dev/null"
    merged.update(values)
    return extra_vars(merged)


BAD_PROVISION = [
    ("tpu_provision_name", "Bad_Name", "Bad_Name"),
    ("tpu_provision_count", "many", "many"),
    ("tpu_provision_zone", "nowhere", "nowhere"),
    ("tpu_provision_project", "X", "'X'"),
    ("tpu_provision_accelerator_type", "tpu-big", "tpu-big"),
    ("tpu_provision_method", "magic", "magic"),
    ("tpu_provision_spot", "maybe", "maybe"),
    ("tpu_provision_tier", "cheap", "cheap"),
    ("tpu_provision_requeue_tries", "lots", "lots"),
    ("tpu_provision_labels", "team=vision", "team=vision"),
    ("tpu_provision_lifetime", "8 hours", "8 hours"),
    ("tpu_provision_ssh_user", "Root User", "Root User"),
    ("tpu_provision_ssh_public_key", "not-a-key", "not-a-key"),
]


@pytest.mark.parametrize(
    ("variable", "value", "shown"), BAD_PROVISION, ids=[b[0] for b in BAD_PROVISION]
)
def test_provision_refuses_bad_input_naming_the_variable(
    emulator: EmulatorCli, env: dict[str, str], variable: str, value: str, shown: str
) -> None:
    values = {"tpu_provision_name": "pod-a", variable: value}
    result = playbook("provision.yml", env, *with_base(**values))
    assert result.returncode != 0, result.tail()
    assert variable in result.output, result.tail()
    assert shown in result.output, result.tail()
    assert emulator.mutating_calls() == {}, emulator.mutating_calls()


def test_provision_without_a_name_says_how_to_pass_it(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    result = playbook("provision.yml", env, *with_base())
    assert result.returncode != 0
    assert "-e tpu_provision_name=" in result.output, result.tail()


def test_provision_in_check_mode_calls_nothing_that_changes(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    result = playbook("provision.yml", env, "--check", *with_base(tpu_provision_name="pod-a"))
    assert result.returncode == 0, result.tail()
    assert result.recap()["localhost"]["changed"] >= 1
    assert emulator.mutating_calls() == {}, emulator.mutating_calls()
    assert emulator.node("pod-a") is None


@pytest.mark.parametrize("confirm", [None, "no", False], ids=["unset", "no", "false"])
def test_teardown_refuses_without_confirmation(
    emulator: EmulatorCli, env: dict[str, str], confirm: Any
) -> None:
    values: dict[str, Any] = {"tpu_provision_name": "pod-a"}
    if confirm is not None:
        values["tpu_teardown_confirm"] = confirm
    assert playbook("provision.yml", env, *with_base(**values)).returncode == 0
    result = playbook("teardown.yml", env, *with_base(**values))
    assert result.returncode != 0
    assert "-e tpu_teardown_confirm=true" in result.output, result.tail()
    assert "tpu_teardown_confirm is" in result.output, result.tail()
    assert emulator.node("pod-a") is not None
    assert "DELETE nodes.delete" not in emulator.mutating_calls()


def test_queued_resource_provision_is_idempotent_and_teardown_removes_it(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    values = {
        "tpu_provision_name": "ms",
        "tpu_provision_count": 2,
        "tpu_provision_spot": True,
        "tpu_provision_accelerator_type": "v4-8",
        "tpu_provision_metadata": {"ssh-keys": "ana:ssh-ed25519 AAAAana ana"},
    }
    first = playbook("provision.yml", env, *with_base(**values))
    assert first.returncode == 0, first.tail()
    assert first.recap()["localhost"]["changed"] >= 1
    # spot capacity goes through a queued resource unless a method is named
    assert "spot capacity is requested through a queued resource" in first.output, first.tail()
    nodes = {name: emulator.node(name) for name in ("ms-0", "ms-1")}
    assert all(n and n["state"] == "READY" for n in nodes.values()), nodes
    assert all(n["schedulingConfig"].get("spot") for n in nodes.values()), nodes
    # One "user:key" line per user: the given ones, then the login user's.
    expected_keys = ["ana:ssh-ed25519 AAAAana ana", f"tpu:{KEY}"]
    assert all(n["metadata"]["ssh-keys"].splitlines() == expected_keys for n in nodes.values())
    groups = inventory(env)
    assert groups["tpu_node_ms_0"]["hosts"] == ["ms-0-w0"]
    assert groups["tpu_node_ms_1"]["hosts"] == ["ms-1-w0"]

    second = playbook("provision.yml", env, *with_base(**values))
    assert second.returncode == 0, second.tail()
    assert all(c["changed"] == 0 for c in second.recap().values()), second.recap()

    gone = playbook("teardown.yml", env, *with_base(tpu_teardown_confirm=True, **values))
    assert gone.returncode == 0, gone.tail()
    assert emulator.node("ms-0") is None and emulator.node("ms-1") is None
    qrs = emulator.admin("GET", "state")["projects"][PROJECT]["zones"][ZONE]["queued_resources"]
    assert qrs == []


def test_recover_refuses_a_missing_list_a_ready_node_and_an_unknown_node(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    missing = playbook("recover.yml", env, *with_base())
    assert missing.returncode != 0 and "tpu_recover_nodes is required" in missing.output

    assert playbook("provision.yml", env, *with_base(tpu_provision_name="pod-a")).returncode == 0
    ready = playbook("recover.yml", env, *with_base(tpu_recover_nodes=["pod-a"]))
    assert ready.returncode != 0
    assert "is READY (health HEALTHY)" in ready.output, ready.tail()
    assert "tpu_recover_force=true" in ready.output, ready.tail()

    unknown = playbook("recover.yml", env, *with_base(tpu_recover_nodes="nope"))
    assert unknown.returncode != 0
    assert "nope does not exist" in unknown.output, unknown.tail()
    assert "DELETE nodes.delete" not in emulator.mutating_calls()


def test_recover_recreates_a_preempted_node_with_its_spec(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    values = {
        "tpu_provision_name": "pod-a",
        "tpu_provision_method": "node",
        "tpu_provision_spot": True,
        "tpu_provision_labels": {"team": "vision"},
        "tpu_provision_metadata": {"startup-script": "echo hi"},
    }
    assert playbook("provision.yml", env, *with_base(**values)).returncode == 0
    before = emulator.node("pod-a")
    emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/pod-a:preempt")
    assert emulator.node("pod-a")["state"] == "PREEMPTED"

    result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a", **values))
    assert result.returncode == 0, result.tail()
    after = emulator.node("pod-a")
    assert after["state"] == "READY"
    assert after["createTime"] != before["createTime"]
    for key in ("acceleratorType", "runtimeVersion", "labels", "metadata", "schedulingConfig"):
        assert after[key] == before[key], (key, before[key], after[key])
    assert after["networkConfig"]["enableExternalIps"] is True
    assert inventory(env)["tpu_node_pod_a"]["hosts"] == ["pod-a-w0", "pod-a-w1"]


def test_recover_shows_a_node_under_maintenance_at_every_poll(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    """The wait for a maintenance event prints the node's state, health and the seconds waited
    at every poll (not Ansible's FAILED - RETRYING), then goes on once the node is healthy."""
    values = {"tpu_provision_name": "pod-a", "tpu_provision_method": "node"}
    assert playbook("provision.yml", env, *with_base(**values)).returncode == 0
    node = f"projects/{PROJECT}/locations/{ZONE}/nodes/pod-a:set"
    emulator.admin("POST", node, {"health": "UNHEALTHY_MAINTENANCE"})
    reads = emulator.admin("GET", "stats")["by_route"].get("GET nodes.get", 0)
    done = threading.Event()

    def end_the_maintenance() -> None:
        """Healthy again after ten more reads of the node: the wait's polls, 0.1 s apart."""
        while not done.wait(0.2):
            if emulator.admin("GET", "stats")["by_route"].get("GET nodes.get", 0) >= reads + 10:
                emulator.admin("POST", node, {"health": "HEALTHY"})
                return

    watcher = threading.Thread(target=end_the_maintenance, daemon=True)
    watcher.start()
    try:
        result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a", **values))
    finally:
        done.set()
        watcher.join(timeout=10)
    assert result.returncode == 0, result.tail()
    polls = re.findall(r"^pod-a: READY, health (\w+) \((\d+) s\)$", result.stdout, re.M)
    under = [int(s) for health, s in polls if health == "UNHEALTHY_MAINTENANCE"]
    assert len(under) >= 5 and under == sorted(under), result.tail()
    assert polls[-1][0] == "HEALTHY", polls[-3:]
    assert "FAILED - RETRYING" not in result.stdout, result.tail()
    assert emulator.node("pod-a")["health"] == "HEALTHY"


def test_a_node_made_again_under_its_name_drops_the_old_vms_facts(
    emulator: EmulatorCli, env: dict[str, str], tmp_path: Path
) -> None:
    """A node deleted and made again (provision after teardown, or recover) is a new VM, maybe
    of another image. The fact cache (ansible.cfg: two hours) still holds the old VM's facts
    under the same host names; site.yml would take them instead of gathering the new VM's."""
    cache = tmp_path / "facts"
    cache.mkdir()
    env = dict(env, ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache))
    hosts = ["pod-a-w0", "pod-a-w1"]

    def leave_old_facts(*names: str) -> None:
        # Written by Ansible itself (set_fact, cacheable), in the cache's own format.
        command = ["ansible", "-i", ",".join(names) + ",", "all", "-c", "local"]
        command += ["-m", "ansible.builtin.set_fact"]
        command += ["-a", "old_vm_distribution=Ubuntu-20.04 cacheable=true"]
        result = run(command, env)
        assert result.returncode == 0, result.tail()

    def cached(host: str) -> bool:
        return any(entry.name.endswith(host) for entry in cache.iterdir())

    values = {"tpu_provision_name": "pod-a", "tpu_provision_method": "node"}
    leave_old_facts(*hosts, "elsewhere-w0")
    assert all(cached(h) for h in [*hosts, "elsewhere-w0"]), sorted(os.listdir(cache))
    result = playbook("provision.yml", env, *with_base(**values))
    assert result.returncode == 0, result.tail()
    assert [h for h in hosts if cached(h)] == [], "the old VMs' facts are dropped"
    assert cached("elsewhere-w0"), "another node's facts are kept"

    leave_old_facts(*hosts)
    emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/pod-a:preempt")
    result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a", **values))
    assert result.returncode == 0, result.tail()
    assert [h for h in hosts if cached(h)] == []


def test_node_method_cannot_give_guaranteed_capacity(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    values = {"tpu_provision_name": "pod-a", "tpu_provision_method": "node"}
    result = playbook("provision.yml", env, *with_base(tpu_provision_tier="guaranteed", **values))
    assert result.returncode != 0
    assert "needs a queued resource" in result.output, result.tail()
    assert emulator.mutating_calls() == {}, emulator.mutating_calls()
