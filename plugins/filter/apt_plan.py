# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The apt packages of the roles a run will go through, for its first apt transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DOCUMENTATION = r"""
name: apt_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The packages that the roles of this run will install, each once
description:
  - Given each role's apt packages that are known before the role runs, and the run's tags,
    returns the packages of the roles that the tags select, in order and each once.
  - The bootstrap playbook hands the result to the collection's apt step as
    C(tpu_apt_packages_ahead), so the first apt step of a run installs them together with its
    own packages in one apt transaction, and the roles' own steps later find them installed.
  - A role selects itself by its name as a tag, as in the bootstrap playbook. C(all) in the
    run tags selects every role; a role named in the skip tags, or C(all) there, is left out.
positional: _input, run_tags, skip_tags
options:
  _input:
    description:
      - Role name to that role's packages, in the order of the play. An empty list (or none)
        leaves the role to its own apt step, as for a package source the role adds first.
    type: dict
    required: true
  run_tags:
    description: The run's tags, as in C(ansible_run_tags).
    type: list
    elements: str
    default: [all]
  skip_tags:
    description: The run's skipped tags, as in C(ansible_skip_tags).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: One apt transaction for the roles of this run
  hosts: tpu
  vars:
    tpu_apt_packages_ahead: >-
      {{ {'python': tpu_python__packages_ahead, 'remote_shell': tpu_remote_shell__packages}
         | cloudtpu.pod.apt_plan(ansible_run_tags, ansible_skip_tags) }}
  roles:
    - cloudtpu.pod.base
    - cloudtpu.pod.python
    - cloudtpu.pod.remote_shell
"""

RETURN = r"""
_value:
  description: The packages, in the order of the roles and of each role's list, each once.
  type: list
  elements: str
"""


def _selected(role: str, run_tags: set[str], skip_tags: set[str]) -> bool:
    if "all" in skip_tags or role in skip_tags:
        return False
    return "all" in run_tags or role in run_tags


def apt_plan(
    plans: Mapping[str, Any],
    run_tags: Iterable[str] | None = ("all",),
    skip_tags: Iterable[str] | None = (),
) -> list[str]:
    """The packages of the selected roles, in order, each once."""
    if not isinstance(plans, Mapping):
        raise TypeError(f"apt_plan takes a mapping of role names to package lists, not {plans!r}")
    run = set(run_tags or ["all"])
    skip = set(skip_tags or [])
    packages: list[str] = []
    for role, names in plans.items():
        if not names or not _selected(str(role), run, skip):
            continue
        if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
            raise TypeError(f"apt_plan: the packages of role {role} must be a list, not {names!r}")
        for name in names:
            if str(name) not in packages:
                packages.append(str(name))
    return packages


class FilterModule:
    """The apt_plan filter."""

    def filters(self) -> dict[str, Any]:
        return {"apt_plan": apt_plan}
