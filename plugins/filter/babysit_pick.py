# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The run playbooks/babysit.yml watches, from the run records found on the workers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import RUN_ID_RE

DOCUMENTATION = r"""
name: babysit_pick
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The run playbooks/babysit.yml watches
description:
  - Takes the run records (the C(.json) lines run.yml writes) found on each worker and returns
    the run asked for, else the newest detached run (run ids sort by their start time).
  - A run that was not detached, or one recorded on no worker, is refused with a message.
  - O(kept) are the records babysit.yml keeps on this machine (lookup C(cloudtpu.pod.babysit_kept)).
    A kept run that is not over and that no worker records, on workers this play reaches and with
    no newer run that continues it, is that of a babysitter stopped after its node was recreated
    and before the run was started again. It is picked too (the newest run wins), with C(resumed)
    true, and a restart starts it again.
positional: requested, kept
options:
  _input:
    description: Per worker, its records (a list of JSON lines or one text).
    type: dict
    required: true
  requested:
    description: The run id asked for (C(tpu_babysit_run)), empty for the newest.
    type: str
    default: ''
  kept:
    description: The babysitter's records of this machine, each with C(run_id), C(hosts),
      C(cmd), C(script), C(workdir), C(origin), C(log) and C(over).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: The newest detached run
  ansible.builtin.set_fact:
    pick: "{{ {'pod-w0': records} | cloudtpu.pod.babysit_pick }}"
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(run_id), C(hosts) (the workers that recorded it), C(cmd),
    C(script) (the script's name for a script run), C(workdir), C(continues), C(resumed) (picked
    from a kept record), C(origin), C(log) and C(events) (those of the kept record of this run
    or of the run it continues, whose log goes on with its events; empty when there is none).
  type: dict
"""


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


def _kept(kept: Any, reached: set[str]) -> dict[str, dict[str, Any]]:
    """The kept records that are sound, not over, and of workers this play reaches, by run id."""
    out: dict[str, dict[str, Any]] = {}
    for record in kept if isinstance(kept, (list, tuple)) else []:
        if not isinstance(record, Mapping) or record.get("over") not in (False, "False", "false"):
            continue
        hosts = record.get("hosts")
        run_id = str(record.get("run_id") or "")
        if not RUN_ID_RE.match(run_id) or not isinstance(hosts, (list, tuple)) or not hosts:
            continue
        if {str(h) for h in hosts} <= reached:
            out[run_id] = dict(record, hosts=sorted(str(h) for h in hosts))
    return out


def _events(record: Mapping[str, Any]) -> list[str]:
    """The events a kept record logged so far (its log goes on with them)."""
    events = record.get("events")
    return [str(e) for e in events] if isinstance(events, (list, tuple)) else []


def babysit_pick(found: Mapping[str, Any], requested: str = "", kept: Any = None) -> dict[str, Any]:
    """The run to watch: C(requested), else the newest detached run of any worker or of the
    babysitter's records of this machine (C(kept)) that no worker has."""
    by_run: dict[str, dict[str, dict[str, Any]]] = {}
    for host, output in (found or {}).items():
        for record in _records(output):
            by_run.setdefault(record["run_id"], {})[str(host)] = record
    continued = {str(r.get("continues") or "") for hosts in by_run.values() for r in hosts.values()}
    kept_runs = _kept(kept, {str(h) for h in (found or {})})
    resumable = {r: k for r, k in kept_runs.items() if r not in by_run and r not in continued}
    detached = sorted(
        (r for r, hosts in by_run.items() if any(h.get("detached") for h in hosts.values())),
        reverse=True,
    )
    result: dict[str, Any] = {"ok": False, "run_id": "", "hosts": [], "cmd": "", "workdir": ""}
    result.update(resumed=False, origin="", log="", events=[])
    if requested and requested not in by_run and requested not in resumable:
        known = ", ".join(detached[:5]) or "none"
        result["message"] = (
            f"run {requested} is not recorded on these workers; detached runs there: {known}"
        )
        return result
    newest = sorted([*detached, *resumable], reverse=True)
    if not requested and not newest:
        result["message"] = (
            "no detached run is recorded on these workers (nor kept by babysit.yml in its log "
            "folder on this machine): start one with playbooks/run.yml -e tpu_run_detach=true"
        )
        return result
    run_id = requested or newest[0]
    if run_id not in by_run:
        record = resumable[run_id]
        cmd = str(record.get("cmd") or "")
        result.update(
            ok=True,
            message="ok",
            run_id=run_id,
            hosts=record["hosts"],
            cmd=cmd,
            script=str(record.get("script") or ""),
            workdir=str(record.get("workdir") or ""),
            continues="",
            resumed=True,
            origin=str(record.get("origin") or run_id),
            log=str(record.get("log") or ""),
            events=_events(record),
        )
        return result
    hosts = by_run[run_id]
    first = hosts[sorted(hosts)[0]]
    if not first.get("detached"):
        result["message"] = f"run {run_id} was not detached: there is nothing left to watch"
        return result
    cmd = str(first.get("cmd") or "")
    continues = str(first.get("continues") or "")
    chain = kept_runs.get(run_id) or kept_runs.get(continues) or {}
    result.update(
        ok=True,
        message="ok",
        run_id=run_id,
        hosts=sorted(hosts),
        cmd=cmd,
        script=cmd[len("script: ") :] if cmd.startswith("script: ") else "",
        workdir=str(first.get("workdir") or ""),
        continues=continues,
        origin=str(chain.get("origin") or ""),
        log=str(chain.get("log") or ""),
        events=_events(chain),
    )
    return result


class FilterModule:
    """cloudtpu.pod.babysit_pick."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_pick": babysit_pick}
