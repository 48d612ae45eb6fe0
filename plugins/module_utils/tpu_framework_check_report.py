# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the framework role's import check said (roles/framework/tasks/check.yml, the
cloudtpu.pod.framework_check_report filter). The check is roles/framework/files/framework_check.py:
its last stdout line that starts with '{' is its JSON report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# timeout(1)'s exit codes: 124 after SIGTERM, 137 after the SIGKILL that follows.
TIMED_OUT = (124, 137)


def _report(lines: list) -> dict[str, Any]:
    found = [line for line in lines if str(line).startswith("{")]
    if not found:
        return {}
    try:
        report = json.loads(found[-1])
    except ValueError:
        return {}
    return report if isinstance(report, dict) else {}


def framework_check_report(result: Mapping[str, Any], name: str, timeout: Any) -> dict[str, Any]:
    """``ok`` (the check finished and the framework works as required), ``report`` (its JSON)
    and ``message`` (what the role says, on success or failure)."""
    rc = result.get("rc")
    out = list(result.get("stdout_lines") or [])
    err = list(result.get("stderr_lines") or [])
    report = _report(out)
    timed_out = rc in TIMED_OUT
    if timed_out or "ok" not in report:
        if timed_out:
            head = (
                f"The import check of {name} did not finish within tpu_framework_check_timeout"
                f" ({timeout} s): libtpu waits while another process holds the TPU (run"
                " tpu-unlock to see which), and a multi-host slice waits until every worker runs"
                " the check."
            )
        else:
            head = f"The import check of {name} printed no report (rc {rc})."
        tail = " | ".join(str(line) for line in err[-8:] + out[-4:])
        return {
            "ok": False,
            "report": report,
            "message": f"{head} Last lines of its output: {tail}",
        }
    if not report["ok"]:
        traceback = "Traceback: " + " | ".join(report["traceback"]) if "traceback" in report else ""
        return {
            "ok": False,
            "report": report,
            "message": f"{report.get('reason', '')}. {traceback}",
        }
    devices = ", ".join(str(device) for device in report.get("devices") or [])
    message = (
        f"{name} {report.get('version', '')}: {report.get('mode', '')}; {report.get('reason', '')};"
        f" devices: {devices} ({report.get('seconds', '')} s)"
    )
    return {"ok": True, "report": report, "message": message}
