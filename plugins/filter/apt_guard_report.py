# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the apt step's guard (roles/apt/templates/guard.sh.j2) waited for and what it repaired."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DOCUMENTATION = r"""
name: apt_guard_report
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What the apt step's guard waited for, and what its dpkg repair finished
description:
  - Takes the registered result of the apt step's guard, whose first output line says how long
    it waited for the package locks, and whose further lines (if any) are dpkg's interrupted
    journal entries (lines that start with C(journal)), C(dpkg --audit)'s findings (with
    C(audit:)) and the packages C(dpkg --configure -a) set up (with C(Setting up)).
  - Returns the lines the step shows; a changed guard ran C(dpkg --configure -a), an unchanged
    one (check mode) only says that a real run finishes it.
options:
  _input:
    description: The guard's result, with C(stdout_lines) and C(changed).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Say how long another package manager kept the locks, and what the dpkg repair finished
  ansible.builtin.debug:
    msg: "{{ tpu_apt__guard | cloudtpu.pod.apt_guard_report }}"
"""

RETURN = r"""
_value:
  description: One line for the wait, and one for an interrupted dpkg run when there was one.
  type: list
  elements: str
"""

INTERRUPTED = re.compile(r"(journal|audit:  )")
SET_UP = re.compile(r"Setting up")


def apt_guard_report(guard: Mapping[str, Any]) -> list[str]:
    """cloudtpu.pod.apt_guard_report."""
    lines = [str(line) for line in guard.get("stdout_lines") or []]
    report = [f"Waited for another apt/dpkg run: {lines[0] if lines else ''}"]
    if len(lines) <= 1:
        return report
    found = "; ".join(line.strip() for line in lines if INTERRUPTED.match(line))
    if guard.get("changed"):
        done = "; ".join(line for line in lines if SET_UP.match(line))
        repair = f"`dpkg --configure -a` finished it: {done}"
    else:
        repair = "a real run finishes it with `dpkg --configure -a`."
    return [*report, f"dpkg had been interrupted ({found}); {repair}"]


class FilterModule:
    """cloudtpu.pod.apt_guard_report."""

    def filters(self) -> dict[str, Any]:
        return {"apt_guard_report": apt_guard_report}
