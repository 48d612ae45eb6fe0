# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Why playbooks/babysit.yml cannot watch the run it picked (plugins/filter/babysit_pick.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DOCUMENTATION = r"""
name: babysit_pick_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why playbooks/babysit.yml cannot watch the run it picked, or an empty string
description:
  - Takes the result of C(cloudtpu.pod.babysit_pick) and returns the sentence of the first of
    these checks that fails, else C(''). A run was found (the pick's own message); a run of a
    local script has the script given again, so that a restart can copy it; the play reaches
    exactly the workers the run ran on, since a restart starts on every worker the play reaches.
positional: script_given, play_hosts
options:
  _input:
    description: The pick, with C(ok), C(message), C(run_id), C(script) and C(hosts).
    type: dict
    required: true
  script_given:
    description: Whether C(tpu_run_script) is given.
    type: bool
    required: true
  play_hosts:
    description: The workers the play reaches (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse a run that cannot be restarted as it was
  ansible.builtin.assert:
    that: _problem == ''
    fail_msg: "babysit.yml: {{ _problem }}"
  vars:
    _problem: >-
      {{ _pick | cloudtpu.pod.babysit_pick_problem(tpu_run_script is defined,
                                                   ansible_play_hosts_all) }}
"""

RETURN = r"""
_value:
  description: The sentence of the first failing check (without the C(babysit.yml:) prefix),
    or an empty string.
  type: str
"""


def babysit_pick_problem(
    pick: Mapping[str, Any], script_given: bool, play_hosts: Iterable[str]
) -> str:
    """The sentence of the first failing check of the picked run, else ''."""
    if not pick.get("ok"):
        return str(pick.get("message") or "no run was picked")
    run_id, script = pick.get("run_id"), pick.get("script")
    if script and not script_given:
        return (
            f"run {run_id} ran the local script {script}: give it again with "
            f"-e tpu_run_script=path/to/{script}, so that a restart can copy it"
        )
    hosts = [str(h) for h in pick.get("hosts") or []]
    reached = sorted(str(h) for h in play_hosts or [])
    if sorted(hosts) != reached:
        return (
            f"run {run_id} ran on {', '.join(hosts)}, but this play reaches "
            f"{', '.join(reached)}: a restart starts on every worker the play reaches, so use "
            "the inventory and --limit the run was started with"
        )
    return ""


class FilterModule:
    """cloudtpu.pod.babysit_pick_problem."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_pick_problem": babysit_pick_problem}
