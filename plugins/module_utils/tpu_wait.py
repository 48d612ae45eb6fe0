# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Waiting on the TPU API: a :class:`Deadline` that a module's ``timeout`` option sets once for
all its waits, and :func:`wait_node`, which reads a node until it is where the caller wants it
(:func:`back_from_maintenance`: READY and no longer under a maintenance event). Used by the
tpu_node, tpu_node_info and tpu_queued_resource modules (``tpu_node_task.py``,
``tpu_queued_task.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError

MAINTENANCE = "UNHEALTHY_MAINTENANCE"


def back_from_maintenance(node: dict[str, Any] | None) -> bool:
    """The node is READY and its health no longer says a maintenance event is under way."""
    return node is not None and node.get("state") == "READY" and node.get("health") != MAINTENANCE


def health_detail(node: dict[str, Any] | None) -> str:
    """What a progress line adds after the state when the wait is for the node's health
    (``pod-a: READY, health UNHEALTHY_MAINTENANCE (40 s)``)."""
    return f", health {node.get('health') or '?'}" if node else ""


class Deadline:
    """Seconds left until a fixed moment; ``clock`` is injectable for tests."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = float(seconds)
        self._clock = clock
        self._end = clock() + self.seconds

    def left(self) -> float:
        return max(0.0, self._end - self._clock())

    def passed(self) -> bool:
        return self._clock() >= self._end


def wait_node(
    client: Any,
    project: str,
    zone: str,
    name: str,
    done: Callable[[dict[str, Any] | None], bool],
    deadline: Deadline,
    poll: float,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
    progress: Any = None,
    health: bool = False,
) -> dict[str, Any] | None:
    """Poll a node until ``done(node or None)``; raise a TIMEOUT TpuApiError naming ``what``.
    ``progress`` (a ``tpu_progress.ProgressLog``) gets the state seen at every read, and its
    health too with ``health``."""
    while True:
        node = client.find_node(project, zone, name)
        state = node.get("state", "?") if node else "gone"
        detail = health_detail(node) if health else ""
        if progress is not None:
            progress.line(name, state, detail)
        if done(node):
            return node
        if deadline.passed():
            state += detail
            raise TpuApiError(
                f"TPU node {name} in {project}/{zone} did not become {what} within "
                f"{deadline.seconds:.0f} s (it is {state}). The API goes on with it in the "
                "background; run the task again to keep waiting, or raise timeout.",
                reason="TIMEOUT",
            )
        sleep(min(poll, max(deadline.left(), 0.01)))
