# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The decisions of playbooks/babysit.yml: its options, which run it watches, what to do after
each check (done, failed, recover, give up, time out, look again) and how long to back off
(documentation: babysit_options.yml and its siblings)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE
from ansible_collections.cloudtpu.pod.plugins.filter.run_pick import RUN_ID_RE, run_id_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    number_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)

# How many rounds babysit.yml imports: one per recovery and the first watch.
ROUNDS = 6
NUMBERS = {
    # field: (variable, default, minimum, maximum, integer, what it is)
    "max_recoveries": (
        "tpu_babysit_max_recoveries",
        3,
        0,
        ROUNDS - 1,
        True,
        "recoveries before the babysitter gives up",
    ),
    "interval": ("tpu_babysit_interval", 30, 1, 3600, True, "seconds between two checks"),
    "backoff_max": (
        "tpu_babysit_backoff_max",
        600,
        0,
        86400,
        True,
        "longest pause in seconds before a recovery",
    ),
    "timeout": (
        "tpu_babysit_timeout",
        7 * 86400,
        60,
        90 * 86400,
        True,
        "seconds the babysitter watches in all",
    ),
}
# What recover.yml recreates by default (its tpu_recover_states and tpu_recover_health).
LOST_STATES = ("PREEMPTED", "TERMINATED")
LOST_HEALTH = ("UNHEALTHY_TENSORFLOW", "TIMEOUT")


def babysit_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The typed options, or ok=false and every problem in one message."""
    errors: list[str] = []
    result: dict[str, Any] = {}
    for field, (name, default, low, high, integer, what) in NUMBERS.items():
        value = raw.get(field)
        if value is None or value == "":
            result[field] = default
            continue
        problem = number_problem(value, name, low, high, integer=integer)
        if problem:
            errors.append(f"{problem} ({what})")
            result[field] = default
        else:
            result[field] = int(float(value))
    run = raw.get("run")
    run = "" if run is None else run
    if run != "" and run_id_problem(run, "tpu_babysit_run"):
        errors.append(run_id_problem(run, "tpu_babysit_run"))
    result["run"] = run
    log_dir = raw.get("log_dir")
    log_dir = "./.cache/babysit" if log_dir is None or log_dir == "" else log_dir
    problem = local_path_problem(log_dir, "tpu_babysit_log_dir", "new folder")
    if problem:
        errors.append(problem)
    result["log_dir"] = "" if problem else local_path(log_dir)
    if raw.get("cmd") not in (None, ""):
        errors.append(
            f"cmd is {_shown(raw['cmd'])}: babysit.yml takes no cmd, it restarts the command the "
            "run recorded; allowed: no cmd (start a run with playbooks/run.yml "
            "-e tpu_run_detach=true first)"
        )
    detach = raw.get("detach")
    key = detach.lower().strip() if isinstance(detach, str) else detach
    if detach not in (None, "") and (key in BOOLEANS_FALSE or key not in BOOLEANS_TRUE):
        errors.append(
            f"tpu_run_detach is {detach!r}: a babysat run is always detached; allowed: true, or "
            "leave it unset"
        )
    result.update(ok=not errors, errors=errors, message="; ".join(errors) or "ok")
    return result


def _records(found: Any) -> list[dict[str, Any]]:
    """The run records in one worker's output: one JSON object a line."""
    lines = found if isinstance(found, (list, tuple)) else str(found or "").splitlines()
    records = []
    for line in lines:
        try:
            record = json.loads(line) if isinstance(line, str) else line
        except ValueError:
            continue
        if isinstance(record, Mapping) and RUN_ID_RE.match(str(record.get("run_id") or "")):
            records.append(dict(record))
    return records


def babysit_pick(found: Mapping[str, Any], requested: str = "") -> dict[str, Any]:
    """The run to watch: C(requested), else the newest detached run of any worker."""
    by_run: dict[str, dict[str, dict[str, Any]]] = {}
    for host, output in (found or {}).items():
        for record in _records(output):
            by_run.setdefault(record["run_id"], {})[str(host)] = record
    detached = sorted(
        (r for r, hosts in by_run.items() if any(h.get("detached") for h in hosts.values())),
        reverse=True,
    )
    result: dict[str, Any] = {"ok": False, "run_id": "", "hosts": [], "cmd": "", "workdir": ""}
    if requested and requested not in by_run:
        known = ", ".join(detached[:5]) or "none"
        result["message"] = (
            f"run {requested} is not recorded on these workers; detached runs there: {known}"
        )
        return result
    if not requested and not detached:
        result["message"] = (
            "no detached run is recorded on these workers: start one with playbooks/run.yml "
            "-e tpu_run_detach=true"
        )
        return result
    run_id = requested or detached[0]
    hosts = by_run[run_id]
    first = hosts[sorted(hosts)[0]]
    if not first.get("detached"):
        result["message"] = f"run {run_id} was not detached: there is nothing left to watch"
        return result
    cmd = str(first.get("cmd") or "")
    result.update(
        ok=True,
        message="ok",
        run_id=run_id,
        hosts=sorted(hosts),
        cmd=cmd,
        script=cmd[len("script: ") :] if cmd.startswith("script: ") else "",
        workdir=str(first.get("workdir") or ""),
        continues=str(first.get("continues") or ""),
    )
    return result


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


def babysit_backoff(attempt: Any, base: Any = 30, cap: Any = 600) -> int:
    """Seconds to wait before recovery number ``attempt`` (1 for the first): none before the
    first, then the check interval doubled per earlier recovery, at most ``cap``."""
    number = int(attempt or 0)
    if number <= 1:
        return 0
    return int(min(float(cap), float(base) * 2 ** (number - 2)))


class FilterModule:
    """The babysit filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "babysit_options": babysit_options,
            "babysit_pick": babysit_pick,
            "babysit_decide": babysit_decide,
            "babysit_backoff": babysit_backoff,
        }
