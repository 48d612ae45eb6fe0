# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's half of cloudtpu.pod.tpu_pull_wait: run the module (one look at the nodes
and their workers' published pull results, through the TPU API) every poll interval until every
worker is done, a node is lost or the time is up, and show at every poll how many workers are
done out of all, and a line for each worker that finishes, as the task runs (Ansible's Display:
the default callback shows it, with no configuration)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull import (
    DONE,
    outcome,
    progress_text,
    tally,
    worker_line,
)

MODULE = "cloudtpu.pod.tpu_pull_wait"


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default  # the module refuses it with a message of its own at the first look


def wait_pull(
    look: Callable[[], Mapping[str, Any]],
    show: Callable[[str], None],
    timeout: float,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Look until every worker is done, a node is lost or ``timeout`` seconds passed; show a
    line per look and one per worker as it finishes. Returns the task's result."""
    start = clock()
    shown: set[tuple[str, int]] = set()
    while True:
        seen = look()
        if seen.get("failed"):  # the API refused, or an option is wrong
            return dict(seen)
        workers = list(seen.get("workers") or [])
        seconds = clock() - start
        for worker in workers:
            key = (str(worker.get("node")), int(worker.get("worker_id") or 0))
            if worker.get("state") == DONE and key not in shown:
                shown.add(key)
                show(worker_line(worker))
        counts = tally(workers)
        show(progress_text(counts, seconds))
        problems = list(seen.get("problems") or [])
        if problems or (counts["total"] and counts["done"] == counts["total"]):
            return outcome(workers, problems, False, timeout)
        if seconds >= timeout:
            return outcome(workers, [], True, timeout)
        sleep(max(0.0, min(poll, timeout - seconds)))


class ActionModule(ActionBase):
    """Poll the module; show the workers done out of all at every poll."""

    TRANSFERS_FILES = False

    def run(self, tmp: str | None = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        result.update(
            wait_pull(
                lambda: self._execute_module(
                    module_name=MODULE, module_args=dict(args), task_vars=task_vars
                ),
                Display().display,
                _number(args.get("timeout"), 3600.0),
                max(0.05, _number(args.get("poll_interval"), 10.0)),
            )
        )
        return result
