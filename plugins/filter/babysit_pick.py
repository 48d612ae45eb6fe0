# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The run playbooks/babysit.yml watches, from the run records found on the workers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.filter.run_pick import RUN_ID_RE

DOCUMENTATION = r"""
name: babysit_pick
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The run playbooks/babysit.yml watches
description:
  - Takes the run records (the C(.json) lines run.yml writes) found on each worker and returns
    the run asked for, else the newest detached run (run ids sort by their start time).
  - A run that was not detached, or one recorded on no worker, is refused with a message.
positional: requested
options:
  _input:
    description: Per worker, its records (a list of JSON lines or one text).
    type: dict
    required: true
  requested:
    description: The run id asked for (C(tpu_babysit_run)), empty for the newest.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: The newest detached run
  ansible.builtin.set_fact:
    pick: "{{ {'pod-w0': records} | cloudtpu.pod.babysit_pick }}"
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(run_id), C(hosts) (the workers that recorded it), C(cmd),
    C(script) (the script's name for a script run), C(workdir) and C(continues).
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


class FilterModule:
    """cloudtpu.pod.babysit_pick."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_pick": babysit_pick}
