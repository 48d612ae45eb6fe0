# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The path check of module_utils/tpu_checks.py as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import path_problem

DOCUMENTATION = r"""
name: path_problem
author: cloudtpu.pod maintainers
version_added: 0.1.0
short_description: Why a path is not acceptable for a variable ('' when it is)
description:
  - Checks that the input is an absolute, normalised path (no C(..), no C(.), no doubled or
    trailing C(/)), without spaces, control characters (a line break, an escape, C(U+0080) to
    C(U+009F)) or Unicode bidirectional-text controls (C(U+202A) to C(U+202E), C(U+2066) to
    C(U+2069), C(U+200E), C(U+200F), C(U+061C), which show a name in another order than it
    has), that is not C(/) and not a system folder. Folders that are refused with everything
    in them are C(/etc), C(/bin), C(/sbin), C(/lib*), C(/boot), C(/dev), C(/proc), C(/sys),
    C(/run), C(/usr/bin), C(/usr/lib*), C(/usr/share) and the like; folders refused only
    themselves are C(/tmp), C(/var), C(/var/lib), C(/var/log), C(/home), C(/root), C(/opt),
    C(/srv), C(/mnt), C(/usr), C(/usr/local) and the like.
  - Per-variable rules narrow it further (O(under), O(parent), O(not_under)).
  - Returns an empty string when the path is fine, else one sentence naming the variable, the
    value and what is allowed, for the C(fail_msg) of an C(ansible.builtin.assert).
positional: name
options:
  _input:
    description: The path to check (any type; a non-string is refused).
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    required: true
  under:
    description: The path must be strictly inside one of these folders.
    type: list
    elements: str
  parent:
    description: The path must be directly in one of these folders (libtpu's lock files in C(/tmp)).
    type: list
    elements: str
  not_under:
    description: More folders the path must not be (or be in).
    type: list
    elements: str
  basename:
    description: A regular expression the last part of the path must match in full.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Check the venv path
  ansible.builtin.assert:
    that: problem == ''
    fail_msg: "{{ problem }}"
    quiet: true
  vars:
    problem: >-
      {{ tpu_python_venv | cloudtpu.pod.path_problem('tpu_python_venv',
           under=[lookup('cloudtpu.pod.login', 'home'), '/opt']) }}
"""

RETURN = r"""
_value:
  description: An empty string when the path is acceptable, else the reason and what is allowed.
  type: str
"""


class FilterModule:
    """cloudtpu.pod.path_problem."""

    def filters(self) -> dict[str, Any]:
        return {"path_problem": path_problem}
