# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The Python packages a run can install before the python role looks at the host."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_python_source import (
    SYSTEM,
    _release,
    python_source,
)

DOCUMENTATION = r"""
name: python_packages_ahead
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The Python packages a run can install before the python role looks at the host
description:
  - Returns the apt packages of C(cloudtpu.pod.python_source)'s decision when the release's
    own archive ships the wanted version (C(pythonX.Y), C(pythonX.Y-venv), C(pythonX.Y-dev)),
    because only then is the decision the same whatever the host's apt sources offer.
  - Returns an empty list when the version comes from the deadsnakes PPA (its source is added
    first), from the host's own sources (the python role asks apt on the host), from a release
    the tables do not know, or from nowhere (the python role refuses with its message).
  - The bootstrap playbook hands the result to C(cloudtpu.pod.apt_plan).
positional: _input, distribution, distribution_version, prefer
options:
  _input:
    description: The wanted Python version, C(major.minor) such as C(3.10).
    type: str
    required: true
  distribution:
    description: The distribution name, as in C(ansible_facts['distribution']).
    type: str
    required: true
  distribution_version:
    description: The release, as in C(ansible_facts['distribution_version']).
    type: str
    required: true
  prefer:
    description: C(tpu_python_source) (C(auto), C(system) or C(deadsnakes)).
    type: str
    default: auto
"""

EXAMPLES = r"""
- name: Packages of Python 3.10 known before the python role runs
  ansible.builtin.debug:
    msg: >-
      {{ '3.10' | cloudtpu.pod.python_packages_ahead(ansible_facts['distribution'],
                                                     ansible_facts['distribution_version']) }}
# Ubuntu 22.04 -> [python3.10, python3.10-venv, python3.10-dev]
# Ubuntu 24.04 -> []  (deadsnakes: the PPA is added by the python role first)
"""

RETURN = r"""
_value:
  description: The packages, or an empty list.
  type: list
  elements: str
"""


def python_packages_ahead(
    version: Any, distribution: str, distribution_version: Any, prefer: str = "auto"
) -> list[str]:
    """python_source's packages when the release's own archive ships the version, else [].

    Only then is the decision the same whatever the host's apt sources say, so a run can install
    the packages before the python role looks at the host (cloudtpu.pod.apt_plan).
    """
    decision = python_source(version, distribution, distribution_version, prefer)
    release = _release(str(distribution), str(distribution_version))
    shipped = SYSTEM.get((str(distribution), release), ())
    if decision["ok"] and decision["source"] == "system" and str(version) in shipped:
        return list(decision["packages"])
    return []


class FilterModule:
    """cloudtpu.pod.python_packages_ahead."""

    def filters(self) -> dict[str, Any]:
        return {"python_packages_ahead": python_packages_ahead}
