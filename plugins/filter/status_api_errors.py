# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The TPU API calls of playbooks/status.yml that failed, one line each."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_status import status_api_errors

DOCUMENTATION = r"""
name: status_api_errors
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: One line per project whose TPU API call failed, for status.yml
description:
  - Reads the registered results of a loop of C(cloudtpu.pod.tpu_node_info) calls, one per
    project, and returns one line per call that failed, naming the project and the API's
    message. Empty when every call answered.
  - A result fails when C(failed) is true, or when it has no C(nodes) but a C(msg), which is
    what C(failed_when) false leaves (Ansible sets C(failed) to false and keeps the message).
  - C(cloudtpu.pod.status_table) starts its lines with the same ones.
options:
  _input:
    description: The results (C(results) of the registered loop), or mappings with C(project).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Fail when the API could not be asked
  ansible.builtin.assert:
    that: tpu_status_api.results | cloudtpu.pod.status_api_errors | length == 0
    fail_msg: "{{ tpu_status_api.results | cloudtpu.pod.status_api_errors | join(' ') }}"
"""

RETURN = r"""
_value:
  description: The error lines; empty when every project answered.
  type: list
  elements: str
"""


class FilterModule:
    """cloudtpu.pod.status_api_errors."""

    def filters(self) -> dict[str, Any]:
        return {"status_api_errors": status_api_errors}
