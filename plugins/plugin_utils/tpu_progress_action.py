# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's half of the progress lines of cloudtpu.pod.tpu_node,
cloudtpu.pod.tpu_queued_resource and cloudtpu.pod.tpu_node_info: while the module waits (for a
node to be READY or gone, for a queued resource to be ACTIVE, for a node to be back from a
maintenance event), each state it reads is shown on the terminal as it comes
(``pod-a: CREATING (40 s)``, ``pod-a: READY, health UNHEALTHY_MAINTENANCE (40 s)``), under the
default callback, with no configuration.

A module cannot print while it runs. When the module runs on the controller (connection local:
the API calls are made from localhost), this action names a private temporary file in the
module's environment (``CLOUDTPU_PROGRESS_FILE``, ``module_utils/tpu_progress.py``); the module
appends a line at every poll, and a thread here shows each new line through Ansible's Display,
which reaches the terminal from a worker process at once. The module's result is unchanged.
No lines are shown for a module run on another host, an async task, a task with no_log, check
mode (nothing is waited for) or wait=false (tpu_node_info: without wait_healthy=true).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress import PROGRESS_ENV

# How often the file is read for new lines; a module polls every few seconds at the least.
READ_EVERY = 0.5


class ProgressTail:
    """The complete lines appended to a file since the last read, shown through ``show``."""

    def __init__(self, path: str, show: Callable[[str], None]) -> None:
        self.path = path
        self.show = show
        self.offset = 0
        self.partial = b""

    def read_new(self) -> int:
        """Show the lines completed since the last read; return how many."""
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except OSError:
            return 0
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace").strip()
            if text:
                self.show(text)
        return len(lines)

    def follow(self, stop: threading.Event, every: float = READ_EVERY) -> None:
        """Read until ``stop`` is set, then once more."""
        while not stop.wait(every):
            self.read_new()
        self.read_new()


def _wanted(value: Any, default: bool = True) -> bool:
    try:
        return boolean(value, strict=True)
    except TypeError:
        return default  # the module reports a bad value itself


class ProgressAction(NormalAction):
    """Run the module as Ansible's normal action does (async, check mode and module_defaults
    included); while it runs on the controller, show its progress lines."""

    _progress_path = ""
    # The module's option that says whether it waits, and its default.
    WAIT_OPTION = "wait"
    WAIT_DEFAULT = True

    def shows_progress(self) -> bool:
        task = self._task
        return (
            getattr(self._connection, "transport", "") == "local"
            and not task.async_val
            and not task.no_log
            and not task.check_mode
            and _wanted(task.args.get(self.WAIT_OPTION, self.WAIT_DEFAULT), self.WAIT_DEFAULT)
        )

    def _compute_environment_string(self, raw_environment_out: dict | None = None) -> str:
        if not self._progress_path:
            return super()._compute_environment_string(raw_environment_out)
        environment: dict = {} if raw_environment_out is None else raw_environment_out
        super()._compute_environment_string(environment)
        environment[PROGRESS_ENV] = self._progress_path
        return self._connection._shell.env_prefix(**environment)

    def run(self, tmp: str | None = None, task_vars: dict | None = None) -> dict:
        if not self.shows_progress():
            return super().run(tmp, task_vars)
        handle, self._progress_path = tempfile.mkstemp(prefix="cloudtpu-progress-", suffix=".log")
        os.close(handle)
        tail = ProgressTail(self._progress_path, Display().display)
        stop = threading.Event()
        thread = threading.Thread(target=tail.follow, args=(stop,), daemon=True)
        thread.start()
        try:
            return super().run(tmp, task_vars)
        finally:
            stop.set()
            thread.join(timeout=10)
            try:
                os.unlink(self._progress_path)
            except OSError:
                pass
            self._progress_path = ""
