# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the tcmalloc role's scan (roles/tcmalloc/files/tcmalloc-scan) found TCMalloc preloaded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DOCUMENTATION = r"""
name: tcmalloc_preloads
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Where TCMalloc is preloaded globally, one line each
description:
  - Takes the entries C(tcmalloc-scan) found (its C(found)) and returns one line per entry,
    C(file:line_number:line), in the scan's order; with none, one line that says so and names
    the places the scan looks at.
options:
  _input:
    description: The entries, each with C(file), C(line_number) and C(line).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Show where TCMalloc is preloaded
  ansible.builtin.debug:
    msg: "{{ tpu_tcmalloc_found | cloudtpu.pod.tcmalloc_preloads }}"
"""

RETURN = r"""
_value:
  description: The lines.
  type: list
  elements: str
"""

NOT_PRELOADED = (
    "TCMalloc is not preloaded globally: nothing set in /etc/environment, /etc/environment.d, "
    "/etc/security/pam_env.conf, /etc/profile, /etc/bash.bashrc, /etc/profile.d or "
    "/etc/ld.so.preload"
)


def tcmalloc_preloads(found: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """cloudtpu.pod.tcmalloc_preloads."""
    lines = [f"{e['file']}:{e['line_number']}:{e['line']}" for e in found or []]
    return lines or [NOT_PRELOADED]


class FilterModule:
    """cloudtpu.pod.tcmalloc_preloads."""

    def filters(self) -> dict[str, Any]:
        return {"tcmalloc_preloads": tcmalloc_preloads}
