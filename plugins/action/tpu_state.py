# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's half of cloudtpu.pod.tpu_state: a role's input problems (found by its checks
on the controller) fail the task before anything runs on the worker; otherwise the module runs.
So a role checks its variables and looks at its whole state in one task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase


def input_problems(problems: Any) -> list[str]:
    """The non-empty problems of the ``problems`` option, in order; a value that is not a list
    of strings is a problem of its own."""
    if isinstance(problems, (str, bytes, Mapping)) or not isinstance(problems, Sequence):
        return [f"tpu_state: problems must be a list of strings; got {type(problems).__name__}."]
    return [str(item).strip() for item in problems if item is not None and str(item).strip()]


def _on(value: Any) -> bool:
    """enabled as a bool; a value that is not one counts as on, so the module reports it."""
    try:
        return boolean(value, strict=True)
    except TypeError:
        return True


class ActionModule(ActionBase):
    """Refuse the role's bad inputs on the controller, then look at (or record) the worker."""

    TRANSFERS_FILES = False

    def run(self, tmp: str | None = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        found = input_problems(args.pop("problems", []))
        if found:
            # Nothing has been sent to the worker: its state is not looked at with bad inputs.
            result.update(failed=True, msg=" ".join(found), problems=found, converged=False)
            return result
        if args.get("state", "check") == "check" and not _on(args.get("enabled", True)):
            # the module would answer the same without looking: no round trip for it
            result.update(
                converged=False, differences=["the fast path is off (tpu_fast_path)"], notes={}
            )
            return result
        result.update(self._execute_module(module_args=args, task_vars=task_vars))
        return result
