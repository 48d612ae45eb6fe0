# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What recover.yml does with each node it is given: recreate a lost plain node from its spec,
create a lost node's queued resource again, wait out a maintenance event, bootstrap the workers
of a node back from maintenance, or refuse (with the reason); and whether the node's workers
bootstrap themselves at boot (pull mode), so recover.yml waits for them instead of pushing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ACTIONS = ("recreate", "requeue", "maintenance", "rebootstrap")
# The second line of playbooks/templates/pull_startup.sh.j2, the startup-script that
# provision.yml gives a node with tpu_provision_bootstrap=pull.
PULL_MARK = "# cloudtpu.pod pull bootstrap,"


def bootstraps_itself(node: Mapping[str, Any]) -> bool:
    """Whether the node's startup-script is the collection's pull bootstrap: its workers run
    ansible-pull of site.yml at every boot, so a second bootstrap from the controller would run
    the same roles on them at the same time."""
    spec = node.get("spec") if isinstance(node.get("spec"), Mapping) else {}
    metadata = spec.get("metadata") if isinstance(spec.get("metadata"), Mapping) else {}
    script = metadata.get("startup-script")
    if not isinstance(script, str):
        return False
    return any(line.startswith(PULL_MARK) for line in script.splitlines()[:3])


def _refusal(node: Mapping[str, Any], states: Sequence[str], health: Sequence[str]) -> str:
    hint = ""
    if node.get("state") == "STOPPED":
        hint = "; a STOPPED node is started with cloudtpu.pod.tpu_node state=started"
    return (
        f"TPU node {node.get('name')} is {node.get('state')} (health {node.get('health')}), not "
        f"one of {', '.join(states)} nor READY with health {' or '.join(health) or 'none'} or "
        "UNHEALTHY_MAINTENANCE, so it does not need recovering. Recovery deletes it and creates "
        "it again (everything on its disks is lost): add -e tpu_recover_force=true to do it "
        "anyway, or -e tpu_recover_rebooted=true when its workers rebooted (after a maintenance "
        f"event) and only need bootstrapping again{hint}."
    )


def recover_plan(
    nodes: Sequence[Mapping[str, Any]],
    states: Sequence[str],
    health: Sequence[str],
    force: bool = False,
    rebooted: bool = False,
) -> list[dict[str, Any]]:
    """One entry per node: ``{name, action, queued_resource, problem, node}``.

    ``nodes`` are node summaries (as cloudtpu.pod.tpu_node_info returns them). A node in one of
    ``states``, or READY with one of ``health``, or any node with ``force``, is lost: a plain node
    is recreated, a node a queued resource owns has its request created again (``requeue``). A
    READY node under maintenance (UNHEALTHY_MAINTENANCE, unless ``health`` names it) is waited
    for; with ``rebooted``, a READY HEALTHY node only has its workers bootstrapped again.
    """
    plan = []
    for node in nodes:
        word = str(node.get("state") or "")
        condition = str(node.get("health") or "")
        entry: dict[str, Any] = {
            "name": node.get("name"),
            "action": "",
            "queued_resource": node.get("queued_resource") or "",
            "problem": "",
            "pull": bootstraps_itself(node),
            "node": dict(node),
        }
        lost = force or word in states or (word == "READY" and condition in health)
        if lost:
            entry["action"] = "requeue" if entry["queued_resource"] else "recreate"
        elif word == "READY" and condition == "UNHEALTHY_MAINTENANCE":
            entry["action"] = "maintenance"
        elif word == "READY" and rebooted:
            entry["action"] = "rebootstrap"
        else:
            entry["problem"] = _refusal(node, states, health)
        plan.append(entry)
    return plan
