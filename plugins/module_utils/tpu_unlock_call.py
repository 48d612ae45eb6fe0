# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""How the libtpu role calls tpu-unlock and reads its answer (roles/libtpu/tasks/unlock.yml,
the cloudtpu.pod.tpu_unlock_call filter). The tool itself is roles/libtpu/files/tpu-unlock."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

COMMAND = "/usr/local/bin/tpu-unlock"
# What the role reports when tpu-unlock did not run: check mode before it was installed.
NOT_INSTALLED = {
    "message": "tpu-unlock is not installed yet (check mode); nothing was inspected",
    "holders": [],
    "removed": [],
    "kept": [],
    "killed": [],
    "refused": [],
    "changed": False,
    "exit_code": -1,
}


def unlock_argv(
    device_glob: str,
    log_dir: str,
    lock_files: Iterable[Any],
    remove_logs: Any = True,
    kill: Any = False,
    kill_grace: Any = 10,
    kill_users: Iterable[Any] = (),
    check_mode: Any = False,
) -> list[str]:
    """tpu-unlock's command line for the role's options (checked in its preflight)."""
    argv = [COMMAND, "--json", "--device-glob", device_glob, "--log-dir", log_dir]
    argv += [f"--lock={path}" for path in lock_files]
    if not boolean(remove_logs, strict=False):
        argv.append("--keep-logs")
    if boolean(kill, strict=False):
        argv += ["--kill", "--grace", str(kill_grace)]
        argv += [f"--user={user}" for user in kill_users]
    if boolean(check_mode, strict=False):
        argv.append("--dry-run")
    return argv


def unlock_report(result: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's JSON report from its registered result, with the lines the role shows:
    ``lines`` (the message and one line per holder of the TPU) and ``refused_text`` (what it
    left alone as unsafe, and why)."""
    if not result or result.get("skipped"):
        report = dict(NOT_INSTALLED)
    else:
        report = json.loads(result["stdout"])
    holders = [
        f"holder: pid {holder['pid']} {holder['user']} {holder['command']}"
        for holder in report.get("holders", [])
    ]
    refused = "; ".join(
        f"{item['path']}: {item.get('reason', '')}"
        for item in report.get("refused", [])
        if "path" in item
    )
    return {"report": report, "lines": [report["message"], *holders], "refused_text": refused}
