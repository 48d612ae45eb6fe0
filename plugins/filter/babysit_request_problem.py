# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why playbooks/babysit.yml refuses its request: bad variables, --check, no worker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DOCUMENTATION = r"""
name: babysit_request_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why playbooks/babysit.yml refuses its request, or an empty string
description:
  - Takes the babysitter's checked options (C(cloudtpu.pod.babysit_options)) and the checked
    variables of run.yml and sync.yml that every restart uses, and returns the sentence of the
    first check that fails, in this order, else C(''). The babysitter's options, run.yml's,
    sync.yml's (their own messages); a restart that syncs with no source; check mode; an
    inventory with no TPU worker.
positional: restart, sync, check_mode, workers
options:
  _input:
    description: The babysitter's checked options, with C(ok) and C(message).
    type: dict
    required: true
  restart:
    description: run.yml's variables as a restart gives them, checked (C(cloudtpu.pod.run_options)).
    type: dict
    required: true
  sync:
    description: sync.yml's variables, checked (C(cloudtpu.pod.sync_options)).
    type: dict
    required: true
  check_mode:
    description: Whether the play runs with C(--check).
    type: bool
    default: false
  workers:
    description: The inventory's TPU workers (C(groups['tpu'])).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Refuse bad variables
  ansible.builtin.assert:
    that: _problem == ''
    fail_msg: "babysit.yml: {{ _problem }}"
  vars:
    _problem: >-
      {{ _tpu_babysit_options | cloudtpu.pod.babysit_request_problem(_tpu_babysit_restart,
         _tpu_babysit_sync, ansible_check_mode, groups['tpu'] | default([])) }}
"""

RETURN = r"""
_value:
  description: The sentence of the first failing check (without the C(babysit.yml:) prefix),
    or an empty string.
  type: str
"""

NO_SYNC_SOURCE = (
    "tpu_run_sync=true, but tpu_sync_src and tpu_sync_repo are both unset or empty: give "
    "-e tpu_sync_src=./myproject or -e tpu_sync_repo=URL"
)
CHECK_MODE = "it recreates nodes and starts runs; --check cannot show what it would do"
NO_WORKER = (
    "no TPU worker in the inventory: the run's node may be lost already (the inventory lists "
    "READY nodes); recover it with playbooks/recover.yml and restart the run"
)


def babysit_request_problem(
    options: Mapping[str, Any],
    restart: Mapping[str, Any],
    sync: Mapping[str, Any],
    check_mode: bool = False,
    workers: Iterable[str] | None = None,
) -> str:
    """The sentence of the first failing check of the request, else ''."""
    for checked in (options, restart, sync):
        if not checked.get("ok"):
            return str(checked.get("message") or "the request was refused")
    if restart.get("sync") and sync.get("mode") == "":
        return NO_SYNC_SOURCE
    if check_mode:
        return CHECK_MODE
    if not list(workers or []):
        return NO_WORKER
    return ""


class FilterModule:
    """cloudtpu.pod.babysit_request_problem."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_request_problem": babysit_request_problem}
