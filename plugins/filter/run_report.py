# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The per-worker result table of playbooks/run.yml."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DOCUMENTATION = r"""
name: run_report
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The per-worker table of a run, its failures and a summary
description:
  - Takes what each worker recorded (C(tpu_run_report), missing for a worker that was
    unreachable or failed before the start) and returns the rows, the table lines to print and
    the workers whose command failed, with their exit codes.
  - An attached run succeeded on a worker when its command's own exit code is 0. A detached run
    succeeded when it started (its exit code lands in the run folder later).
positional: _input, hosts, detach, tail, run_id, runs_dir
options:
  _input:
    description: The workers' reports, in the order of I(hosts) (C(none) or C({}) when absent).
      Keys C(started), C(pid), C(finished), C(rc), C(tail), C(log).
    type: list
    elements: raw
    required: true
  hosts:
    description: The workers' inventory names.
    type: list
    elements: str
    required: true
  detach:
    description: Whether the run was detached.
    type: bool
    default: false
  tail:
    description: How many output lines were kept per worker.
    type: int
    default: 20
  run_id:
    description: The run's id, for the summary.
    type: str
    default: ''
  runs_dir:
    description: Where the run folders are on the workers, for the summary.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: The run's table
  ansible.builtin.debug:
    msg: "{{ (reports | cloudtpu.pod.run_report(hosts, false, 20, run_id))['lines'] }}"
"""

RETURN = r"""
_value:
  description: C(rows) (host, ok, rc, tail), C(lines) (the table), C(failed) (host and rc of
    every worker that failed), C(ok) and C(summary).
  type: dict
"""

NOT_STARTED = "not started: unreachable or failed before the start"


def _row(host: str, report: Mapping[str, Any] | None, detach: bool, tail: int) -> dict[str, Any]:
    report = report or {}
    if not report.get("started"):
        return {"host": host, "ok": False, "rc": "-", "tail": [report.get("reason") or NOT_STARTED]}
    if detach:
        where = f"pid {report.get('pid')}, log {report.get('log', '?')}"
        return {"host": host, "ok": True, "rc": "started", "tail": [where]}
    lines = [str(line) for line in report.get("tail") or []]
    lines = lines[-tail:] if tail > 0 else []
    if not report.get("finished"):
        why = report.get("reason") or "still running after tpu_run_timeout, or the wait broke off"
        return {"host": host, "ok": False, "rc": "?", "tail": [*lines, why]}
    rc = report.get("rc")
    ok = rc == 0
    return {"host": host, "ok": ok, "rc": "?" if rc is None else rc, "tail": lines}


def run_report(
    reports: Sequence[Mapping[str, Any] | None],
    hosts: Sequence[str],
    detach: bool = False,
    tail: int = 20,
    run_id: str = "",
    runs_dir: str = "",
) -> dict[str, Any]:
    """Rows, table lines, failures and a summary for the run's workers."""
    reports = list(reports or [])
    reports += [None] * (len(hosts) - len(reports))
    rows = [_row(h, r, bool(detach), int(tail)) for h, r in zip(hosts, reports, strict=False)]
    width = max([6, *(len(r["host"]) for r in rows)])
    shown = "state" if detach else "rc"
    lines = [
        f"{'worker'.ljust(width)}  {shown.ljust(8)}  output (last {tail} lines)",
        f"{'-' * width}  {'-' * 8}  {'-' * 40}",
    ]
    for row in rows:
        for index, line in enumerate(row["tail"] or [""]):
            host = row["host"] if index == 0 else ""
            code = str(row["rc"]) if index == 0 else ""
            lines.append(f"{host.ljust(width)}  {code.ljust(8)}  {line}".rstrip())
    failed = [{"host": r["host"], "rc": r["rc"]} for r in rows if not r["ok"]]
    verb = "started" if detach else "succeeded"
    summary = f"{len(rows) - len(failed)} of {len(rows)} workers {verb}"
    if run_id:
        where = f"{runs_dir}/{run_id}" if runs_dir else run_id
        summary += f"; run {run_id}, logs in {where}/<worker>.log on each worker"
    if failed:
        summary += "; failed: " + ", ".join(f"{f['host']} (rc {f['rc']})" for f in failed)
    lines.append(summary)
    return {
        "rows": rows,
        "lines": lines,
        "failed": failed,
        "ok": not failed and bool(rows),
        "summary": summary,
    }


class FilterModule:
    """The run_report filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_report": run_report}
