# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Where a worker gets Python X.Y from: the distribution, the deadsnakes PPA, or nowhere."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_python_source import python_source

DOCUMENTATION = r"""
name: python_source
author: cloudtpu.pod maintainers
version_added: 0.1.0
short_description: Decide where a Debian or Ubuntu host gets Python X.Y from
description:
  - Given the wanted Python version and the host's distribution facts, returns where the
    interpreter comes from and which apt packages provide it.
  - The order is the distribution's own packages (C(pythonX.Y), C(pythonX.Y-venv),
    C(pythonX.Y-dev)) when the release ships that version, then on Ubuntu the deadsnakes PPA
    when it publishes that version for the release, then the host's own apt sources when
    I(apt_policy) shows a candidate for C(pythonX.Y) (an internal mirror or a local repository
    added to the image), else no source, with a message that names the version, the
    distribution and what would work.
  - The tables of what each release ships are part of this plugin (see the source); a release
    missing from them is only served when I(prefer) names the source explicitly.
  - Used by the C(cloudtpu.pod.python) role in its preflight; it never fails itself, so the role
    can put the message into an assertion.
positional: _input, distribution, distribution_version, prefer, apt_policy
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
    description:
      - The release, as in C(ansible_facts['distribution_version']) (C(22.04) on Ubuntu,
        C(12) or C(12.7) on Debian; only the major number counts on Debian).
    type: str
    required: true
  prefer:
    description:
      - C(auto) follows the order above. C(system) and C(deadsnakes) force that source; a
        release the tables do not know is then trusted, a release they know to lack the version
        is still refused.
    type: str
    default: auto
    choices: [auto, system, deadsnakes]
  apt_policy:
    description:
      - The output of C(apt-cache policy pythonX.Y) on the host. A candidate version in the
        block of that very package means the host's apt sources offer it, so C(auto) and
        C(system) install it from there even where the release itself lacks it. Empty (the
        default) or no candidate leaves the decision to the tables.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Decide where Python 3.10 comes from on this host
  ansible.builtin.set_fact:
    decision: >-
      {{ '3.10' | cloudtpu.pod.python_source(ansible_facts['distribution'],
                                             ansible_facts['distribution_version']) }}
# Ubuntu 22.04 -> {ok: true, source: system, packages: [python3.10, python3.10-venv, ...]}
# Ubuntu 24.04 -> {ok: true, source: deadsnakes, ...}
# Debian 12    -> {ok: false, message: "... Debian 12 ships python3.11; set
#                 tpu_python_version: '3.11' ..."}
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    ok:
      description: Whether a source was found.
      type: bool
    source:
      description: C(system), C(deadsnakes), or an empty string when I(ok) is false.
      type: str
    packages:
      description: The apt packages that provide the interpreter, its venv module and headers.
      type: list
      elements: str
    interpreter:
      description: The interpreter's path once the packages are installed.
      type: str
    message:
      description: One sentence that explains the decision (or the refusal and what would work).
      type: str
"""


class FilterModule:
    """cloudtpu.pod.python_source."""

    def filters(self) -> dict[str, Any]:
        return {"python_source": python_source}
