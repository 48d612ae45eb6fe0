# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""cloudtpu.pod.ssh_wait: wait until a host answers over its connection, with a line per poll
while it does not (``pod-a-w0: no SSH answer yet (15 s)``). Each try is Ansible's own
wait_for_connection, given the time left up to the next line; the result is its result."""

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
    "timeout": {"type": "int", "default": 600},
    "sleep": {"type": "int", "default": 2},
    "connect_timeout": {"type": "int", "default": 5},
    "poll": {"type": "float", "default": 10.0},
}


def wait_ssh(
    attempt: Callable[[float], dict[str, Any]],
    show: Callable[[str], None],
    name: str,
    timeout: float,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Try ``attempt(seconds)`` (a wait_for_connection of at most that long) until one answers or
    ``timeout`` passed, showing a line after every try that did not. This task's result."""
    start = clock()
    while True:
        seconds = clock() - start
        left = timeout - seconds
        result = attempt(max(1.0, min(poll, left)))
        seconds = clock() - start
        if not result.get("failed"):
            return {"changed": False, "elapsed": round(seconds, 1)}
        if seconds >= timeout:
            return {
                "failed": True,
                "elapsed": round(seconds, 1),
                "msg": f"{name}: no answer over its connection after {timeout:.0f} s "
                f"({str(result.get('msg') or 'no reason given').strip()})",
            }
        show(progress_line(name, "no SSH answer yet", seconds))


class ActionModule(SpecAction):
    """wait_for_connection in slices of ``poll`` seconds, a line after each that found none."""

    SPEC = SPEC

    def act(self, result: dict, args: dict[str, Any], task_vars: dict[str, Any]) -> dict:
        waiter, task = inner_action(self, "ansible.builtin.wait_for_connection", {})

        def attempt(seconds: float) -> dict[str, Any]:
            task.args = {
                "timeout": max(1, round(seconds)),
                "sleep": args["sleep"],
                "connect_timeout": args["connect_timeout"],
            }
            return waiter.run(task_vars=task_vars)

        name = str(task_vars.get("inventory_hostname", "host"))
        result.update(
            wait_ssh(
                attempt,
                Display().display,
                name,
                float(args["timeout"]),
                max(1.0, float(args["poll"])),
            )
        )
        return result
