# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Progress lines of a long wait: what a module sees each time it polls (a node's state, a
queued resource's state), for the controller to show while the module still runs.

A module cannot print while it runs; its result comes back once, at the end. So the collection's
action plugins for cloudtpu.pod.tpu_node and cloudtpu.pod.tpu_queued_resource
(``plugins/plugin_utils/tpu_progress_action.py``) name a file in the environment variable
``CLOUDTPU_PROGRESS_FILE`` when the module runs on the controller, and show each line the module
appends to it as it comes (``pod-a: CREATING (40 s)``). Without that variable (the module run on
another host, or without the action plugins) nothing is written. A line holds a resource's name
and state and the seconds since the task started: never an argument's value.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

PROGRESS_ENV = "CLOUDTPU_PROGRESS_FILE"


def progress_line(name: str, state: str, seconds: float, detail: str = "") -> str:
    """``pod-a: CREATING (40 s)``; ``detail`` goes after the state (``, 1 of 2 nodes``)."""
    return f"{name}: {state or '?'}{detail} ({max(0.0, seconds):.0f} s)"


class ProgressLog:
    """Appends progress lines to the file named by ``CLOUDTPU_PROGRESS_FILE`` (or ``path``)."""

    def __init__(
        self, path: str | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = os.environ.get(PROGRESS_ENV, "") if path is None else path
        self._clock = clock
        self._start = clock()

    @property
    def on(self) -> bool:
        return bool(self.path)

    def line(self, name: str, state: str, detail: str = "") -> None:
        """Write one line; a file that cannot be written turns progress off, the wait goes on."""
        if not self.path:
            return
        text = progress_line(name, state, self._clock() - self._start, detail)
        try:
            with open(self.path, "a", encoding="utf-8") as stream:
                stream.write(text + "\n")
        except OSError:
            self.path = ""
