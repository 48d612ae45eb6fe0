# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the framework role's import check said (module_utils/tpu_framework_check_report.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_check_report import (
    framework_check_report as _report,
)

DOCUMENTATION = r"""
name: framework_check_report
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What the framework role's import check said
description:
  - Reads the registered result of the framework role's import check (its last stdout line
    that starts with C({) is its JSON report) and returns whether the check finished and the
    framework works as required, with the sentence the role shows. A check that timed out
    (exit code 124 or 137 from C(timeout)) or printed no report is shown with the last lines
    of its output.
positional: _input, name, timeout
options:
  _input:
    description: The registered result of the check.
    type: dict
    required: true
  name:
    description: The framework, C(jax) or C(torch_xla).
    type: str
    required: true
  timeout:
    description: C(tpu_framework_check_timeout), for the message.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Check what the framework sees
  ansible.builtin.assert:
    that: checked['ok']
    fail_msg: "{{ checked['message'] }}"
    success_msg: "{{ checked['message'] }}"
  vars:
    checked: "{{ probe | cloudtpu.pod.framework_check_report('jax', 300) }}"
"""

RETURN = r"""
_value:
  description: C(ok), C(report) (the check's JSON, empty without one) and C(message).
  type: dict
"""


def framework_check_report(result: dict, name: str, timeout: Any) -> dict[str, Any]:
    """cloudtpu.pod.framework_check_report."""
    try:
        return _report(result, name, timeout)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_check_report: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_check_report."""

    def filters(self) -> dict[str, Any]:
        return {"framework_check_report": framework_check_report}
