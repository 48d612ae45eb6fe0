# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What playbooks/babysit.yml does after a check: done, failed, recover, restart, give up, time
out, or look again."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

DOCUMENTATION = r"""
name: babysit_decide
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What playbooks/babysit.yml does after a check
description:
  - A node lost in recover.yml's sense (a state of I(lost_states), or READY with a health of
    I(lost_health)) means C(recover), or C(give_up) once C(max_recoveries) are used; a node
    the API no longer has means C(give_up). This holds even when the workers wrote exit codes
    (a preempted VM's processes are stopped).
  - Otherwise a run whose process is gone on a worker without an exit code (the worker
    rebooted for maintenance, or the process was killed) means C(restart) while recoveries
    are left (a restart counts as one), else C(give_up).
  - Otherwise every worker's exit code means C(done) (all 0) or C(failed); the deadline passed
    means C(timeout); else C(wait).
positional: lost_states, lost_health
options:
  _input:
    description: C(nodes) (name, state, health from the API), C(node_names), C(workers) (host
      to what the status probe's --watch printed, JSON with C(state) and C(rc), or an exit
      code's text; empty when the worker did not answer), C(recoveries), C(max_recoveries), C(now)
      and C(deadline) (epoch seconds).
    type: dict
    required: true
  lost_states:
    description: States that count as lost, a list or comma-separated; none for recover.yml's
      default, PREEMPTED and TERMINATED.
    type: raw
  lost_health:
    description: Health values of a READY node that count as lost; none for recover.yml's
      default, UNHEALTHY_TENSORFLOW and TIMEOUT.
    type: raw
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    decision: "{{ facts | cloudtpu.pod.babysit_decide(tpu_recover_states | default(none)) }}"
"""

RETURN = r"""
_value:
  description: C(action) (done, failed, recover, restart, give_up, timeout or wait), C(message),
    C(nodes) (the lost nodes) and C(codes) (the exit codes seen).
  type: dict
"""

# What recover.yml recreates by default (its tpu_recover_states and tpu_recover_health).
LOST_STATES = ("PREEMPTED", "TERMINATED")
LOST_HEALTH = ("UNHEALTHY_TENSORFLOW", "TIMEOUT")


def _seen(value: Any) -> tuple[str, int | None]:
    """What one worker said of the run: (state, exit code). The status probe's --watch answer
    (JSON: exited, running, gone or missing), or an exit code's text; anything else (no
    answer, an unreachable worker) is "unknown"."""
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return "exited", int(text)
        try:
            value = json.loads(text.splitlines()[-1]) if text else None
        except ValueError:
            return "unknown", None
    states = ("exited", "running", "gone", "missing")
    if isinstance(value, Mapping) and value.get("state") in states:
        rc = value.get("rc")
        if value["state"] == "exited" and isinstance(rc, int) and not isinstance(rc, bool):
            return "exited", rc
        return ("unknown" if value["state"] == "exited" else str(value["state"])), None
    return "unknown", None


def _names(value: Any, default: Iterable[str]) -> set[str]:
    """A list of names, or a comma-separated string as from -e; None for the default."""
    if value is None:
        return set(default)
    items = value.split(",") if isinstance(value, str) else value
    return {str(item).strip() for item in items if str(item).strip()}


def babysit_decide(
    facts: Mapping[str, Any],
    lost_states: Any = None,
    lost_health: Any = None,
) -> dict[str, Any]:
    """What to do after one check.

    C(facts): C(nodes) (name, state, health as the API reports them; a node the API no longer
    has is absent), C(node_names) (the run's nodes), C(workers) (host: what the status probe's
    --watch said, JSON with state and rc, or an exit code's text; empty when the worker could
    not be reached), C(recoveries) done so far,
    C(max_recoveries), C(now) and C(deadline) (epoch seconds).
    """
    states, health = _names(lost_states, LOST_STATES), _names(lost_health, LOST_HEALTH)
    seen = {str(n.get("name")): n for n in facts.get("nodes") or []}
    missing = [n for n in facts.get("node_names") or [] if n not in seen]
    lost = sorted(
        name
        for name, node in seen.items()
        if node.get("state") in states
        or (node.get("state") == "READY" and node.get("health") in health)
    )
    seen_on = {str(h): _seen(v) for h, v in (facts.get("workers") or {}).items()}
    workers = {h: said[1] for h, said in seen_on.items()}
    gone = sorted(h for h, said in seen_on.items() if said[0] in ("gone", "missing"))
    recoveries = int(facts.get("recoveries") or 0)
    limit = int(facts.get("max_recoveries") or 0)
    codes = ", ".join(f"{h} rc {rc}" for h, rc in sorted(workers.items()) if rc is not None)
    result: dict[str, Any] = {"nodes": lost, "codes": codes}
    if missing:
        return dict(
            result,
            action="give_up",
            message=f"node {', '.join(missing)} is gone from the API: there is no spec to "
            "recreate it from; provision it again and restart the run",
        )
    if lost:
        where = ", ".join(f"{n} {seen[n].get('state')}/{seen[n].get('health')}" for n in lost)
        if recoveries >= limit:
            return dict(
                result,
                action="give_up",
                message=f"{where}: {recoveries} of {limit} recoveries (tpu_babysit_max_recoveries) "
                "used; recover by hand or run babysit.yml again",
            )
        return dict(result, action="recover", message=f"{where}: recovery {recoveries + 1}")
    if gone:
        where = ", ".join(gone)
        if recoveries >= limit:
            return dict(
                result,
                action="give_up",
                message=f"the run is gone on {where} without an exit code; {recoveries} of "
                f"{limit} recoveries (tpu_babysit_max_recoveries) used; restart it by hand or "
                "run babysit.yml again",
            )
        return dict(
            result,
            action="restart",
            message=f"the run is gone on {where} without an exit code of its own (its process "
            "ended with the worker's reboot, a maintenance event or a kill) while every node is "
            f"READY: restart {recoveries + 1}",
        )
    if workers and all(rc is not None for rc in workers.values()):
        if all(rc == 0 for rc in workers.values()):
            return dict(result, action="done", message=f"the run completed: {codes}")
        return dict(result, action="failed", message=f"the run ended with {codes}")
    if float(facts.get("now") or 0) >= float(facts.get("deadline") or 0):
        return dict(
            result,
            action="timeout",
            message="still running at the end of tpu_babysit_timeout; the run goes on unwatched",
        )
    waiting = ", ".join(h for h, rc in sorted(workers.items()) if rc is None)
    return dict(
        result,
        action="wait",
        message=f"no exit code yet from {waiting} and every node is READY; looking again",
    )


class FilterModule:
    """cloudtpu.pod.babysit_decide."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_decide": babysit_decide}
