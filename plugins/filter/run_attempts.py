# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The earlier attempts of a run that babysit.yml restarted, for playbooks/logs.yml."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import earlier_attempts

DOCUMENTATION = r"""
name: run_attempts
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The runs a run continues, oldest first, from their records
description:
  - Takes run records (JSON lines, as C(playbooks/run.yml) writes them next to each log, and as
    a run keeps copies of them in C(tpu_run_log_copy)) and a run id, and returns the ids of the
    runs it continues, oldest first. A run that C(playbooks/babysit.yml) restarted records the
    run before it in C(continues); the chain ends at a record that is missing or continues
    nothing.
  - Lines that are not run records are left out. Never fails.
positional: _input, run_id
options:
  _input:
    description: The record lines.
    type: list
    elements: str
    required: true
  run_id:
    description: The run whose earlier attempts to find.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The attempts before the newest run
  ansible.builtin.debug:
    msg: "{{ records.stdout_lines | cloudtpu.pod.run_attempts('20261123T183000Z-ab12') }}"
"""

RETURN = r"""
_value:
  description: The run ids, oldest first (empty when the run continues none).
  type: list
  elements: str
"""


def run_attempts(lines: Any, run_id: str) -> list[str]:
    """See DOCUMENTATION."""
    return earlier_attempts(lines, str(run_id))


class FilterModule:
    """cloudtpu.pod.run_attempts."""

    def filters(self) -> dict[str, Any]:
        return {"run_attempts": run_attempts}
