# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether a whole string matches a pattern: the test the playbooks and roles check values with.

Jinja's ``match`` test is Python's ``re.match``: a pattern ``^...$`` lets a value with a final
line break through, since ``$`` also matches before a trailing "\\n" ("pod-a\\n" passes
``'^[a-z-]+$'``). This test is ``re.fullmatch``, and a value that is not a string never matches
(the ``match`` test compares the text of any value: ``['a']`` as "['a']").
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: fullmatch
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Does the whole string match a regular expression
description:
  - True when the whole input string matches O(pattern) (Python's C(re.fullmatch)), so the
    pattern needs no C(^) or C($); a final line break is not matched unless the pattern says so.
    C(ansible.builtin.match) is C(re.match), where C($) also matches before a final line
    break, so C(^[a-z]+$) lets C(tpu) followed by a line break through; the playbooks and roles
    of the collection check user values with this test instead.
  - A value that is not a string (none, a number, a list, a mapping) never matches; to check the
    text of a number as C(-e) or YAML may give it, apply the C(string) filter first, as the
    second example does.
  - Works with C(select) and C(reject) over a list, as the third example does.
positional: pattern
options:
  _input:
    description: The value to test.
    type: raw
    required: true
  pattern:
    description: The regular expression (Python syntax) the whole value must match.
    type: str
    required: true
  ignorecase:
    description: Match without regard to case.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Refuse a node name that is not a node ID (a trailing line break included)
  ansible.builtin.assert:
    that: node_name is cloudtpu.pod.fullmatch('[a-z]([-a-z0-9]{0,61}[a-z0-9])?')
    fail_msg: "node_name must be a node ID; got {{ node_name | to_json }}."

- name: A port given as a number or as text
  ansible.builtin.assert:
    that: ssh_port | string is cloudtpu.pod.fullmatch('[0-9]{1,5}')

- name: The entries of a list that are not environment variable names
  ansible.builtin.debug:
    msg: >-
      {{ names | map('string') | reject('cloudtpu.pod.fullmatch', '[A-Za-z_][A-Za-z0-9_]*')
         | list }}
"""

RETURN = r"""
_value:
  description: V(True) when the whole string matches, V(False) otherwise (always for a non-string).
  type: bool
"""


def fullmatch(value: Any, pattern: str, ignorecase: bool = False) -> bool:
    """Whether the string ``value`` matches ``pattern`` in full; never for a non-string."""
    if not isinstance(pattern, str):
        raise AnsibleFilterError(
            f"cloudtpu.pod.fullmatch: the pattern must be a string, not {type(pattern).__name__}"
        )
    if not isinstance(value, str):
        return False
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignorecase else 0)
    except re.error as exc:
        raise AnsibleFilterError(f"cloudtpu.pod.fullmatch: bad pattern {pattern!r}: {exc}") from exc
    return compiled.fullmatch(value) is not None


class TestModule:
    """cloudtpu.pod.fullmatch."""

    def tests(self) -> dict[str, Any]:
        return {"fullmatch": fullmatch}
