# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why a playbook that works on TPU workers has none to work on ('' when it has some)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DOCUMENTATION = r"""
name: worker_match_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why no TPU worker matched ('' when some did), for a playbook's first assert
description:
  - The one check, and its message, of every playbook that works on the workers (run.yml,
    sync.yml, logs.yml, reset.yml, verify.yml) for an empty inventory or a C(--limit) that
    matches no worker. Returns an empty string when the input names at least one worker.
  - The message names the playbook, how many hosts group C(tpu) has, the limit, and how to
    look at both.
positional: playbook, group, limit
options:
  _input:
    description:
      - The workers the playbook would work on (C(ansible_play_hosts_all) of a play on
        C(all:localhost), intersected with group C(tpu)).
    type: list
    elements: str
    required: true
  playbook:
    description: The playbook's file name, for the message.
    type: str
    required: true
  group:
    description: The hosts of group C(tpu) (C(groups['tpu']), before the limit).
    type: list
    elements: str
    default: []
  limit:
    description: The C(--limit) given (C(ansible_limit)), empty when none.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Refuse when no TPU worker matched
  ansible.builtin.assert:
    that: problem | length == 0
    fail_msg: "{{ problem }}"
  vars:
    problem: >-
      {{ ansible_play_hosts_all | intersect(groups['tpu'] | default([]))
         | cloudtpu.pod.worker_match_problem('logs.yml', groups['tpu'] | default([]),
                                             ansible_limit | default('')) }}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
_value:
  description: An empty string when a worker matched, else the message.
  type: str
"""


def worker_match_problem(
    workers: Sequence[str] | None,
    playbook: str,
    group: Sequence[str] | None = (),
    limit: Any = "",
) -> str:
    """'' when a worker matched, else what the user reads (see DOCUMENTATION)."""
    if workers:
        return ""
    size = len(group or [])
    limit_text = f", --limit {limit}" if limit else ""
    return (
        f"{playbook}: no TPU worker matched (group tpu has {size} host{'' if size == 1 else 's'}"
        f"{limit_text}); check the inventory and the limit with ansible-inventory --graph tpu"
    )


class FilterModule:
    """cloudtpu.pod.worker_match_problem."""

    def filters(self) -> dict[str, Any]:
        return {"worker_match_problem": worker_match_problem}
