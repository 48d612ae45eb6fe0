# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""tpu-unlock's report read from its registered result (module_utils/tpu_unlock_call.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_unlock_call import unlock_report

DOCUMENTATION = r"""
name: tpu_unlock_report
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: tpu-unlock's report, and the lines the libtpu role shows of it
description:
  - Reads the JSON that C(tpu-unlock --json) printed, from the registered result of its task;
    a skipped task (check mode before the tool is installed) gives a report that says nothing
    was inspected, with C(exit_code) -1.
positional: _input
options:
  _input:
    description: The registered result of the task that ran tpu-unlock.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Keep tpu-unlock's report
  ansible.builtin.set_fact:
    report: "{{ (result | cloudtpu.pod.tpu_unlock_report)['report'] }}"
"""

RETURN = r"""
_value:
  description:
    - C(report) (the tool's JSON, with C(message), C(holders), C(removed), C(kept), C(killed),
      C(refused), C(changed), C(exit_code)), C(lines) (the message and one line per holder of
      the TPU) and C(refused_text) (what it left alone as unsafe, and why).
  type: dict
"""


def tpu_unlock_report(result: dict) -> dict:
    """cloudtpu.pod.tpu_unlock_report."""
    try:
        return unlock_report(result)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.tpu_unlock_report: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.tpu_unlock_report."""

    def filters(self) -> dict[str, Any]:
        return {"tpu_unlock_report": tpu_unlock_report}
