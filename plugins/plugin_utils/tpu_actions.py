# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Controller code the collection's action plugins share: running another action (one of
Ansible's own, such as async_status or wait_for_connection) on the same host and connection, as
the task does, so that its result is Ansible's and only the waiting around it is ours; and
:class:`SpecAction`, an action whose own code does the work, with its arguments checked against
its spec."""

from __future__ import annotations

from typing import Any, ClassVar

from ansible.plugins.action import ActionBase


def inner_action(outer: ActionBase, name: str, args: dict[str, Any]) -> tuple[ActionBase, Any]:
    """The action ``name`` for ``outer``'s task, host and connection, with ``args``; and the task
    copy it runs (set its ``args`` again between two runs to change them)."""
    task = outer._task.copy()
    task.args = dict(args)
    action = outer._shared_loader_obj.action_loader.get(
        name,
        task=task,
        connection=outer._connection,
        play_context=outer._play_context,
        loader=outer._loader,
        templar=outer._templar,
        shared_loader_obj=outer._shared_loader_obj,
    )
    return action, task


class SpecAction(ActionBase):
    """An action whose own code does the work (no module of its own goes to the host): its
    arguments are checked against ``SPEC`` (the options its module file documents), then
    :meth:`act` does it."""

    TRANSFERS_FILES = False
    SPEC: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._VALID_ARGS = frozenset(cls.SPEC)

    def run(self, tmp: str | None = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=self.SPEC)[1]
        return self.act(result, args, task_vars or {})

    def act(self, result: dict, args: dict[str, Any], task_vars: dict[str, Any]) -> dict:
        """Update and return ``result`` (ActionBase's) with what the action did."""
        raise NotImplementedError
