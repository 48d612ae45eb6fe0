# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The sentence the tcmalloc role ends with: what its mode did on the worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: tcmalloc_summary
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: What the tcmalloc role's mode did on a worker, in one sentence
description:
  - C(keep) changes nothing and counts the global preloads in place and those disabled earlier.
  - C(disable) and C(framework) count the global preloads taken out now and earlier, and say
    where the originals are (C(disable)) or that the venv preloads the library (C(framework)).
  - C(restore) counts the lines put back.
positional: done
options:
  _input:
    description: The mode, C(keep), C(disable), C(framework) or C(restore).
    type: str
    required: true
  done:
    description:
      - What the run found and did, and where. C(found), C(disabled) (the scan's lists),
        C(restored) (the entries put back, a list), C(backup_file), C(env_file), C(library)
        and C(venv_path).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Report what the role did
  ansible.builtin.debug:
    msg: "{{ tpu_tcmalloc_mode | cloudtpu.pod.tcmalloc_summary(done) }}"
  vars:
    done:
      found: "{{ tpu_tcmalloc_found }}"
      disabled: "{{ tpu_tcmalloc_disabled }}"
      restored: []
      backup_file: /etc/cloudtpu/tcmalloc.orig
      env_file: /etc/cloudtpu/tcmalloc.env
      library: /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
      venv_path: /home/tpu/venv
"""

RETURN = r"""
_value:
  description: The sentence.
  type: str
"""


def _count(done: Mapping[str, Any], key: str) -> int:
    return len(done.get(key) or [])


def tcmalloc_summary(mode: str, done: Mapping[str, Any]) -> str:
    """cloudtpu.pod.tcmalloc_summary."""
    found, disabled = _count(done, "found"), _count(done, "disabled")
    if mode == "keep":
        return (
            f"mode keep: changed nothing; {found} global TCMalloc preload(s) in place, "
            f"{disabled} disabled earlier."
        )
    taken = f"mode {mode}: {found} global preload(s) taken out now, {disabled} earlier; "
    if mode == "disable":
        return (
            f"{taken}originals in {done['backup_file']} (tpu_tcmalloc_mode=restore puts them back)."
        )
    if mode == "framework":
        return (
            f"{taken}the venv {done['venv_path']} preloads {done['library']} when activated; "
            f"other programs can use {done['env_file']}."
        )
    if mode == "restore":
        return (
            f"mode restore: put back {_count(done, 'restored')} line(s) from {done['backup_file']}."
        )
    raise AnsibleFilterError(f"cloudtpu.pod.tcmalloc_summary: no such mode {mode!r}")


class FilterModule:
    """cloudtpu.pod.tcmalloc_summary."""

    def filters(self) -> dict[str, Any]:
        return {"tcmalloc_summary": tcmalloc_summary}
