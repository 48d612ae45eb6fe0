# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What playbooks/babysit.yml does with the run's nodes when it stops watching
(``tpu_babysit_teardown``): keep them, delete them when the run completed, or delete them
whenever the watch ended. Checked by the ``babysit_options`` filter, decided by the
``babysit_teardown`` filter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

# never: keep the nodes (the default); on_success: delete them when the run completed with
# exit code 0 on every worker; always: delete them whenever the watch ended.
TEARDOWN = ("never", "on_success", "always")
TEARDOWN_DEFAULT = "never"
# The actions of the babysit_decide filter that end the watch. A watch that used every round
# while the run still goes (wait, or a run just restarted: recover, restart) has not ended:
# babysit.yml says to run it again, and its nodes are kept whatever tpu_babysit_teardown says.
ENDED = ("done", "failed", "give_up", "timeout")


def teardown_problem(value: Any, name: str = "tpu_babysit_teardown") -> str:
    """'' for one of TEARDOWN (or unset), else one sentence naming the variable, the value and
    the allowed values."""
    if value is None or value == "" or (isinstance(value, str) and value in TEARDOWN):
        return ""
    return (
        f"{name} is {_shown(value)}: not a teardown policy; allowed: {', '.join(TEARDOWN)} "
        f"(default {TEARDOWN_DEFAULT}: the nodes are kept)"
    )


def teardown_now(policy: str, action: str, over: bool = True) -> bool:
    """Whether babysit.yml deletes the run's nodes now: ``policy`` is tpu_babysit_teardown,
    ``action`` the last decision of the watch (babysit_decide's done, failed, give_up, timeout,
    or wait, recover, restart when every round was used) and ``over`` whether that decision
    ended the watch."""
    if policy not in TEARDOWN:
        raise ValueError(teardown_problem(policy))
    ended = bool(over) and action in ENDED
    if policy == "always":
        return ended
    if policy == "on_success":
        return ended and action == "done"
    return False


def _ended(babysit: Mapping[str, Any]) -> bool:
    """babysit.yml's C(over), a boolean or its text as a template may give it."""
    over = babysit.get("over")
    return over is True or str(over).strip().lower() in ("true", "yes", "1")


def teardown_plan(babysit: Mapping[str, Any], policy: str) -> dict[str, Any]:
    """What babysit.yml's report does with the nodes: C(delete) (bool), C(nodes) (node to zone,
    the nodes to delete: all of the run's when C(delete), else none), C(project) and C(note)
    (a sentence for the log and the report: which nodes are deleted, or, when the policy is not
    never, which are kept and why; '' otherwise)."""
    nodes = babysit.get("nodes") if isinstance(babysit.get("nodes"), Mapping) else {}
    action = str(babysit.get("action") or "")
    delete = bool(nodes) and teardown_now(policy, action, _ended(babysit))
    listed = ", ".join(f"{name} ({zone})" for name, zone in sorted(nodes.items()))
    note = ""
    if delete:
        note = f"deleted node {listed} (tpu_babysit_teardown={policy})"
    elif nodes and policy != "never":
        why = (
            "the run did not complete"
            if _ended(babysit) and action in ENDED
            else "the watch is not over"
        )
        note = f"{why}: node {listed} kept (tpu_babysit_teardown={policy})"
    return {
        "delete": delete,
        "nodes": {str(name): str(zone) for name, zone in sorted(nodes.items())} if delete else {},
        "project": str(babysit.get("project") or ""),
        "note": note,
    }
