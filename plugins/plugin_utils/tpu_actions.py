# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Controller code the collection's action plugins share: running another action (one of
Ansible's own, such as async_status or wait_for_connection) on the same host and connection, as
the task does, so that its result is Ansible's and only the waiting around it is ours."""

from __future__ import annotations

from typing import Any

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
