# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The TPU device glob check of module_utils/tpu_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import device_glob_problem

DOCUMENTATION = r"""
name: device_glob_problem
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Why a glob is not a pattern of TPU device files ('' when it is)
description:
  - Accepts only the TPU device families, C(/dev/accel*) (or C(/dev/accel[0-9]*),
    C(/dev/accel0)) up to v4, C(/dev/accel/*) on newer kernels and C(/dev/vfio/[0-9]*) from
    v5e/v5p on; after the prefix only digits, C(*), C(?) and digit classes such as C([0-9]).
  - So C(/dev/*), C(/dev/fuse), C(/dev/input/*) or C(/dev/vfio/vfio) are refused, and a tool
    that ends the holders of the matched files (tpu-unlock --kill) never meets another device.
  - Returns an empty string when fine, else one sentence naming the variable, the value and what
    is allowed.
positional: name
options:
  _input:
    description: The glob to check (any type; a non-string is refused).
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the device glob
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_libtpu_device_glob | cloudtpu.pod.device_glob_problem('tpu_libtpu_device_glob') }}
"""

RETURN = r"""
_value:
  description: >-
    An empty string when the glob is a TPU device pattern, else the reason and what is
    allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.device_glob_problem."""

    def filters(self) -> dict[str, Any]:
        return {"device_glob_problem": device_glob_problem}
