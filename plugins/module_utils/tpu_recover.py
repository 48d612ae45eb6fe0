# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What recover.yml does with each node it is given: recreate a lost plain node from its spec,
create a lost node's queued resource again, wait out a maintenance event, bootstrap the workers
of a node back from maintenance, or refuse (with the reason); and whether the node's workers
bootstrap themselves at boot (pull mode), so recover.yml waits for them instead of pushing.

A node asked for that the API no longer knows is created again from the spec the controller's
journal kept for it (``tpu_journal.py``) when an earlier run deleted it and did not finish."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import is_pull_bootstrap

ACTIONS = ("recreate", "requeue", "maintenance", "rebootstrap")
# States of a node on its way to READY: one that the journal names is waited for, as a node
# under maintenance is, then bootstrapped.
COMING_UP = ("CREATING", "STARTING", "RESTARTING", "REPAIRING")


def bootstraps_itself(node: Mapping[str, Any]) -> bool:
    """Whether the node's startup-script is the collection's pull bootstrap, or the hidden
    marker of one (the modules return no startup-script itself: tpu_secrets.py): its workers
    run ansible-pull of site.yml at every boot, so a second bootstrap from the controller would
    run the same roles on them at the same time."""
    spec = node.get("spec") if isinstance(node.get("spec"), Mapping) else {}
    metadata = spec.get("metadata") if isinstance(spec.get("metadata"), Mapping) else {}
    return is_pull_bootstrap(metadata.get("startup-script"))


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


def missing_problem(name: str, project: str = "", zone: str = "") -> str:
    """Why a node asked for that neither the API nor the journal knows cannot be recovered."""
    where = f" in {project}/{zone}" if project and zone else ""
    return (
        f"TPU node {name} does not exist{where}, and the recovery journal holds no spec for it, "
        "so there is no spec to recreate it from. Create it with playbooks/provision.yml; if a "
        "queued resource owned it (a SUSPENDED request has no nodes left), request it again with "
        "cloudtpu.pod.tpu_queued_resource state=recreated or provision.yml."
    )


def _journaled(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The plan of a node an earlier run deleted: created again from the journal's spec."""
    spec = dict(entry.get("spec") or {})
    node = {"name": name, "state": "", "health": "", "spec": spec, "workers": []}
    return {
        "name": name,
        "action": "recreate",
        "queued_resource": "",
        "problem": "",
        "pull": bootstraps_itself(node),
        "journal": True,
        "node": node,
    }


def recover_plan(
    nodes: Sequence[Mapping[str, Any]],
    states: Sequence[str],
    health: Sequence[str],
    force: bool = False,
    rebooted: bool = False,
    journal: Mapping[str, Mapping[str, Any]] | None = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """One entry per node: ``{name, action, queued_resource, problem, pull, journal, node}``.

    ``nodes`` are node summaries (as cloudtpu.pod.tpu_node_info returns them). A node in one of
    ``states``, or READY with one of ``health``, or any node with ``force``, is lost: a plain node
    is recreated, a node a queued resource owns has its request created again (``requeue``). A
    READY node under maintenance (UNHEALTHY_MAINTENANCE, unless ``health`` names it) is waited
    for; with ``rebooted``, a READY HEALTHY node only has its workers bootstrapped again.

    ``names`` (default: the nodes' names) are the nodes asked for, in order. One the API does
    not know but ``journal`` (entries by name, as ``tpu_journal.read`` returns them) holds is
    recreated from the journal's spec (``journal`` true in its entry); one neither knows is
    refused. A node the API knows is planned from its live spec; when it is not lost but the
    journal still holds it (an earlier run created it and stopped before the end), it is waited
    for until READY (``maintenance``) and bootstrapped (``rebootstrap``), ``journal`` true, so
    that its entry is cleared.
    """
    plan = []
    journal = journal or {}
    found = {node.get("name"): node for node in nodes}
    order = list(names) if names is not None else list(found)
    for name in order:
        node = found.get(name)
        if node is None:
            kept = journal.get(name)
            if isinstance(kept, Mapping) and isinstance(kept.get("spec"), Mapping):
                plan.append(_journaled(name, kept))
            else:
                plan.append(
                    {
                        "name": name,
                        "action": "",
                        "queued_resource": "",
                        "problem": missing_problem(name),
                        "pull": False,
                        "journal": False,
                        "node": {"name": name, "spec": {}, "workers": []},
                    }
                )
            continue
        word = str(node.get("state") or "")
        condition = str(node.get("health") or "")
        entry: dict[str, Any] = {
            "name": node.get("name"),
            "action": "",
            "queued_resource": node.get("queued_resource") or "",
            "problem": "",
            "pull": bootstraps_itself(node),
            "journal": False,
            "node": dict(node),
        }
        lost = force or word in states or (word == "READY" and condition in health)
        # An earlier run recreated it and stopped before the end (a timeout, Ctrl-C): finish
        # that run's work instead of refusing a node that looks fine.
        resumed = isinstance(journal.get(name), Mapping) and not lost
        if lost:
            entry["action"] = "requeue" if entry["queued_resource"] else "recreate"
        elif word == "READY" and condition == "UNHEALTHY_MAINTENANCE":
            entry["action"] = "maintenance"
        elif resumed and word in COMING_UP:
            entry["action"], entry["journal"] = "maintenance", True
        elif word == "READY" and (rebooted or resumed):
            entry["action"], entry["journal"] = "rebootstrap", resumed
        else:
            entry["problem"] = _refusal(node, states, health)
        plan.append(entry)
    return plan
