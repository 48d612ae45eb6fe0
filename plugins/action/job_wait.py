# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""cloudtpu.pod.job_wait: wait for an async job on a host, with a line per poll while it runs
(``pod-a-w0: framework check running (15 s)``). Each poll is Ansible's own async_status, run
on the host as the task is (become included); the job's result is left to async_status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ansible.utils.display import Display
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress import progress_line
from ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_actions import (
    SpecAction,
    inner_action,
)

SPEC = {
    "jid": {"type": "str", "required": True},
    "label": {"type": "str", "default": "job"},
    "timeout": {"type": "int", "default": 300},
    "poll": {"type": "float", "default": 5.0},
}


def wait_job(
    status: Callable[[], dict[str, Any]],
    show: Callable[[str], None],
    name: str,
    label: str,
    timeout: float,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Read the job's status until it finished or ``timeout`` passed, and show a line every
    ``poll`` seconds while it runs. Reads come every second at first, then less often, up to
    every ``poll`` seconds: a short job is seen done at once, a long one costs few reads.
    Returns this task's result."""
    start = clock()
    shown = start
    while True:
        current = status()
        now = clock()
        seconds = now - start
        if current.get("failed") and not current.get("finished"):
            # async_status could not read the job (no such job, no results file)
            return {
                "failed": True,
                "finished": False,
                "seconds": round(seconds, 1),
                "msg": f"{name}: {label} cannot be read: {current.get('msg', 'no status')}",
            }
        if current.get("finished"):
            return {"changed": False, "finished": True, "seconds": round(seconds, 1)}
        if seconds >= timeout:
            return {
                "failed": True,
                "finished": False,
                "seconds": round(seconds, 1),
                "msg": f"{name}: {label} still running after {timeout:.0f} s.",
            }
        if now - shown >= poll:
            show(progress_line(name, f"{label} running", seconds))
            shown = now
        sleep(max(0.01, min(poll, max(1.0, seconds / 2), timeout - seconds, poll - (now - shown))))


class ActionModule(SpecAction):
    """Poll async_status on the host; show a line for every poll that finds the job running."""

    SPEC = SPEC

    def act(self, result: dict, args: dict[str, Any], task_vars: dict[str, Any]) -> dict:
        async_status, _task = inner_action(
            self, "ansible.builtin.async_status", {"jid": args["jid"]}
        )
        name = str(task_vars.get("inventory_hostname", "host"))
        result.update(
            wait_job(
                lambda: async_status.run(task_vars=task_vars),
                Display().display,
                name,
                args["label"],
                float(args["timeout"]),
                max(0.1, float(args["poll"])),
            )
        )
        return result
