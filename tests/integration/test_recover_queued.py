"""recover.yml for nodes a queued resource owns (the request is deleted and created again with
the spec the API reports) and for maintenance events (waited out, the node is not recreated),
against the emulator's in-memory backend; SSH and bootstrap are skipped as in
test_lifecycle_playbooks.py."""

from __future__ import annotations

import threading

from tests.integration.lifecycle_support import PROJECT, ZONE, EmulatorCli, playbook
from tests.integration.test_lifecycle_playbooks import with_base

LOCATION = f"projects/{PROJECT}/locations/{ZONE}"


def node_reads(emulator: EmulatorCli) -> int:
    routes = emulator.admin("GET", "stats")["by_route"]
    return sum(count for route, count in routes.items() if route.startswith("GET nodes."))


def queued(emulator: EmulatorCli, name: str) -> dict | None:
    zone = emulator.admin("GET", "state")["projects"][PROJECT]["zones"][ZONE]
    return next((q for q in zone["queued_resources"] if q["name"].endswith("/" + name)), None)


def test_recover_requests_a_preempted_queued_resource_again(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    values = {
        "tpu_provision_name": "qr-a",
        "tpu_provision_tier": "flex_start",
        "tpu_provision_max_run_duration": "3600s",
        "tpu_provision_valid_until_duration": "600s",
        "tpu_provision_labels": {"team": "vision"},
    }
    assert playbook("provision.yml", env, *with_base(**values)).returncode == 0
    before_qr, before_node = queued(emulator, "qr-a"), emulator.node("qr-a")
    emulator.admin("POST", f"{LOCATION}/nodes/qr-a:preempt")
    assert queued(emulator, "qr-a")["state"]["state"] == "SUSPENDED"

    result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="qr-a"))
    assert result.returncode == 0, result.tail()
    assert "qr-a: requeue" in result.output, result.tail()
    after_qr, after_node = queued(emulator, "qr-a"), emulator.node("qr-a")
    assert after_qr["state"]["state"] == "ACTIVE"
    for key in ("tpu", "runDuration", "queueingPolicy"):
        assert after_qr[key] == before_qr[key], key
    assert after_node["state"] == "READY" and after_node["labels"] == {"team": "vision"}
    assert after_node["schedulingConfig"]["provisioningModel"] == "FLEX_START"
    assert after_node["createTime"] >= before_node["createTime"]
    calls = emulator.mutating_calls()
    assert calls.get("DELETE queuedResources.delete") == 1, calls
    assert "DELETE nodes.delete" not in calls, calls


def test_recover_waits_out_a_maintenance_event_without_recreating(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    assert playbook("provision.yml", env, *with_base(tpu_provision_name="pod-a")).returncode == 0
    set_path = f"{LOCATION}/nodes/pod-a:set"
    emulator.admin("POST", set_path, {"health": "UNHEALTHY_MAINTENANCE"})
    done = threading.Event()

    def heal_once_read() -> None:
        # the event ends after recover has read the node (and begun waiting for it)
        start = node_reads(emulator)
        while not done.wait(0.1):
            if node_reads(emulator) >= start + 2:
                emulator.admin("POST", set_path, {"health": "HEALTHY"})
                return

    healer = threading.Thread(target=heal_once_read, daemon=True)
    healer.start()
    try:
        result = playbook("recover.yml", env, *with_base(tpu_recover_nodes="pod-a"))
    finally:
        done.set()
        healer.join(timeout=10)
    assert result.returncode == 0, result.tail()
    assert "pod-a: maintenance" in result.output, result.tail()
    assert emulator.node("pod-a")["health"] == "HEALTHY"
    calls = emulator.mutating_calls()
    assert "DELETE nodes.delete" not in calls and calls.get("POST nodes.create") == 1, calls
