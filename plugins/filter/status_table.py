# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The status table of playbooks/status.yml: the API's nodes joined with what each worker said."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_status import (
    api_refused,
    project_name,
    status_api_errors,
)

DOCUMENTATION = r"""
name: status_table
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Lines of the pod status table from the API's nodes and the workers' reports
description:
  - Joins the nodes that C(cloudtpu.pod.tpu_node_info) returned (every state, so nodes that
    are not READY and that the inventory leaves out still show) with one report per inventory
    worker (its inventory variables and what the status probe printed, or that it was
    unreachable), and returns the lines of the table that C(playbooks/status.yml) shows.
  - A node's workers come from the API; each is matched to its inventory host by node and
    worker number. Inventory hosts that no API node names (a static inventory) are shown under
    their C(tpu_node), or C(static).
  - With no node and no worker, the lines say which projects and zones were looked in.
positional: _input, reports, looked_in, searched
options:
  _input:
    description: Nodes as C(cloudtpu.pod.tpu_node_info) returns them (C(nodes)).
    type: list
    elements: dict
    required: true
  reports:
    description:
      - One mapping per inventory worker, with C(host), C(node), C(worker_id), C(internal_ip),
        C(external_ip), C(unreachable) (bool), C(probe) (the probe's JSON text) and C(error).
    type: list
    elements: dict
    required: true
  looked_in:
    description:
      - Where the nodes were looked for, one mapping per project with C(project) (or C(item),
        as in the registered results of a loop over projects), C(zones) (empty means every
        zone), and C(msg) when the API refused (with C(failed) true, or absent or false as
        C(failed_when) false leaves it; a result without C(nodes) and with C(msg) failed).
    type: list
    elements: dict
    default: []
  searched:
    description:
      - Where the projects were looked for (C(searched) of C(cloudtpu.pod.status_places)), said
        when there is no project at all.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Show the table
  ansible.builtin.debug:
    msg: "{{ nodes | cloudtpu.pod.status_table(reports, [{'project': 'p', 'zones': []}]) }}"
"""

RETURN = r"""
_value:
  description: The lines of the table.
  type: list
  elements: str
"""

HEADER = ("worker", "internal ip", "external ip", "uptime", "TPU locks")
WIDTHS = (24, 15, 15, 12)


def format_uptime(seconds: Any) -> str:
    """``3d 04h 05m`` from seconds; ``?`` when unknown."""
    try:
        total = int(float(seconds))
    except (TypeError, ValueError):
        return "?"
    if total < 0:
        return "?"
    return f"{total // 86400}d {(total % 86400) // 3600:02d}h {(total % 3600) // 60:02d}m"


def parse_probe(text: Any) -> dict[str, Any] | None:
    """The probe's JSON object (its last line that is one), or None."""
    if isinstance(text, Mapping):
        return dict(text)
    for line in reversed(str(text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def describe_locks(locks: Any) -> str:
    """Who holds the TPU, from tpu-unlock's --dry-run --json report."""
    if not isinstance(locks, Mapping):
        return "?"
    if locks.get("error"):
        return str(locks["error"])
    holders = locks.get("holders") or []
    if holders:
        return " ".join(
            f"{h.get('pid')}/{h.get('user')}/{str(h.get('command') or '')[:24]}" for h in holders
        )
    if locks.get("exit_code") == 4 or locks.get("unreadable"):
        return "not inspectable (needs root)"
    if locks.get("removed"):
        return "free, stale lock files: " + " ".join(str(p) for p in locks["removed"])
    return "free"


def describe_run(run: Mapping[str, Any]) -> str:
    """One detached run: id, state, exit code, command."""
    if run.get("error"):
        return f"run {run.get('run_id')}: unreadable record ({run['error']})"
    state = run.get("state")
    if state == "running":
        what = f"running (pid {run.get('pid')})"
    elif state == "exited":
        what = f"exited rc {run.get('rc')}"
    else:
        what = f"ended without an exit code (pid {run.get('pid')} is gone)"
    return f"run {run.get('run_id')}: {what}: {run.get('cmd')}"


def _cell(value: Any) -> str:
    return str(value) if value not in (None, "") else "-"


def _row(cells: Sequence[str]) -> str:
    padded = [c.ljust(w) for c, w in zip(cells[:-1], WIDTHS, strict=False)] + [cells[-1]]
    return "  " + " ".join(padded).rstrip()


def worker_lines(
    report: Mapping[str, Any] | None,
    api_worker: Mapping[str, Any] | None,
    name: str,
    node_state: str,
) -> list[str]:
    """The row of one worker and its detail lines (runs, tpu-info)."""
    api_worker = api_worker or {}
    internal = _cell((report or {}).get("internal_ip") or api_worker.get("internal_ip"))
    external = _cell((report or {}).get("external_ip") or api_worker.get("external_ip"))
    if report is None:
        why = "not in the inventory" + (f" (node {node_state})" if node_state else "")
        return [_row([name, internal, external, "-", why])]
    if report.get("unreachable"):
        why = str(report.get("error") or "").strip().splitlines()
        detail = f"unreachable: {why[0][:80]}" if why else "unreachable"
        return [_row([name, internal, external, "-", detail])]
    probe = parse_probe(report.get("probe"))
    if probe is None:
        error = str(report.get("error") or "no report").strip().splitlines() or ["no report"]
        return [_row([name, internal, external, "?", f"probe failed: {error[0][:80]}"])]
    lines = [
        _row(
            [
                name,
                internal,
                external,
                format_uptime(probe.get("uptime")),
                describe_locks(probe.get("locks")),
            ]
        )
    ]
    lines.extend("      " + describe_run(r) for r in probe.get("runs") or [])
    lines.extend(describe_tpu_info(probe.get("tpu_info")))
    return lines


def describe_tpu_info(info: Any) -> list[str]:
    """The worker's tpu-info lines: its tables; ``no TPU device`` where tpu-info found no TPU
    chip (a container, a CPU host); else why they are not shown."""
    info = info if isinstance(info, Mapping) else {}
    if info.get("shown"):
        output = str(info.get("output") or "").splitlines()
        return ["      tpu-info:"] + ["        " + line for line in output]
    if info.get("no_device"):
        return [f"      tpu-info: no TPU device ({info.get('reason') or 'no TPU chip found'})"]
    return [f"      tpu-info: not shown, {info.get('reason') or 'no answer'}"]


def _node_header(name: str, node: Mapping[str, Any], count: int) -> str:
    where = "/".join(p for p in (node.get("project"), node.get("zone")) if p) or "?"
    return (
        f"node {name}  type {node.get('accelerator_type') or '?'}  {where}  "
        f"state {node.get('state') or '?'}  health {node.get('health') or '-'}  "
        f"{count} worker{'s' if count != 1 else ''}"
    )


def status_table(
    nodes: Sequence[Mapping[str, Any]],
    reports: Sequence[Mapping[str, Any]],
    looked_in: Sequence[Mapping[str, Any]] = (),
    searched: str = "",
) -> list[str]:
    """The lines of the status table (see DOCUMENTATION)."""
    reports = [r for r in reports or [] if isinstance(r, Mapping)]
    by_worker: dict[tuple[str, int], Mapping[str, Any]] = {}
    for report in reports:
        try:
            by_worker[(str(report.get("node") or ""), int(report.get("worker_id")))] = report
        except (TypeError, ValueError):
            continue
    shown: set[str] = set()
    lines: list[str] = status_api_errors(looked_in)
    for node in sorted(nodes or [], key=lambda n: (str(n.get("zone")), str(n.get("name")))):
        name = str(node.get("name") or "?")
        workers = list(node.get("workers") or [])
        lines.append(_node_header(name, node, len(workers)))
        lines.append(_row(list(HEADER)))
        for worker in workers:
            report = by_worker.get((name, int(worker.get("worker_id", 0))))
            host = str(report["host"]) if report else f"{name} worker {worker.get('worker_id')}"
            if report:
                shown.add(host)
            lines.extend(worker_lines(report, worker, host, str(node.get("state") or "")))
    rest: dict[str, list[Mapping[str, Any]]] = {}
    for report in reports:
        if str(report.get("host")) not in shown:
            rest.setdefault(str(report.get("node") or "static"), []).append(report)
    for name, members in sorted(rest.items()):
        first = members[0]
        header = {
            "project": first.get("project"),
            "zone": first.get("zone"),
            "accelerator_type": first.get("accelerator_type"),
            "state": (first.get("state") or "?") + " (inventory; the API did not list it)",
            "health": first.get("health"),
        }
        lines.append(_node_header(name, header, len(members)))
        lines.append(_row(list(HEADER)))
        for report in sorted(members, key=lambda r: str(r.get("host"))):
            lines.extend(worker_lines(report, None, str(report.get("host")), ""))
    if not nodes and not reports:
        places = "; ".join(
            f"project {project_name(p)}, "
            + (f"zones {', '.join(p['zones'])}" if p.get("zones") else "every zone")
            + (" (the API did not answer: see the error above)" if api_refused(p) else "")
            for p in looked_in
        )
        lines.append(
            "No TPU node and no worker in the inventory. Looked in: "
            + (
                places
                or "no project"
                + (f" in {searched}" if searched else "")
                + " (set CLOUDTPU_PROJECT, or name projects in a tpu_vm inventory source)"
            )
            + "."
        )
    return lines


class FilterModule:
    """cloudtpu.pod.status_table."""

    def filters(self) -> dict[str, Any]:
        return {"status_table": status_table}
