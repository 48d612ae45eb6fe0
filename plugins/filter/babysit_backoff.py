# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The pause of playbooks/babysit.yml before a recovery."""

from __future__ import annotations

from typing import Any

DOCUMENTATION = r"""
name: babysit_backoff
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The pause of playbooks/babysit.yml before a recovery
description:
  - None before the first recovery; before recovery N the check interval doubled N-2 times,
    at most I(cap) seconds.
positional: base, cap
options:
  _input:
    description: The number of the recovery about to start (1 for the first).
    type: int
    required: true
  base:
    description: The check interval in seconds.
    type: float
    default: 30
  cap:
    description: The longest pause in seconds.
    type: float
    default: 600
"""

EXAMPLES = r"""
- name: Back off
  ansible.builtin.wait_for:
    timeout: "{{ 3 | cloudtpu.pod.babysit_backoff(30, 600) }}"
"""

RETURN = r"""
_value:
  description: Seconds to wait.
  type: int
"""


def babysit_backoff(attempt: Any, base: Any = 30, cap: Any = 600) -> int:
    """Seconds to wait before recovery number ``attempt`` (1 for the first): none before the
    first, then the check interval doubled per earlier recovery, at most ``cap``."""
    number = int(attempt or 0)
    if number <= 1:
        return 0
    return int(min(float(cap), float(base) * 2 ** (number - 2)))


class FilterModule:
    """cloudtpu.pod.babysit_backoff."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_backoff": babysit_backoff}
