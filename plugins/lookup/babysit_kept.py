# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The records playbooks/babysit.yml keeps on this machine, one per babysat run."""

from __future__ import annotations

DOCUMENTATION = r"""
name: babysit_kept
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: The records babysit.yml keeps on this machine
description:
  - C(playbooks/babysit.yml) writes, next to each run's log in its log folder
    (C(tpu_babysit_log_dir)), C(<run id>.json) with the run it watches now, its workers, its
    command and folder, and whether the watch is over. The babysitter stopped at any point
    (Ctrl-C, a closed laptop) and started again from the same folder reads them with this
    lookup, so that a run whose node was recreated before the run was started again is not lost
    (filter C(cloudtpu.pod.babysit_pick)).
  - Returns the records of the folder given as the first term, each a dict. A folder that does
    not exist has none. Only regular files of this user that no other user may write, read
    without following a symbolic link, are read (the check of the recovery journal); any other
    file (a link, another user's, a file that is not a JSON object) is left out with a warning.
options:
  _terms:
    description: The log folder (absolute, as C(cloudtpu.pod.babysit_options) gives it).
    required: true
"""

EXAMPLES = r"""
- name: The kept records
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.babysit_kept', '/home/me/project/.cache/babysit') }}"
"""

RETURN = r"""
_raw:
  description: The records, each the babysitter's state of one run, sorted by file name.
  type: list
  elements: dict
"""

import json
import os
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import private_problem

display = Display()


def kept_records(folder: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(records, warnings) of the ``*.json`` files of ``folder``."""
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except FileNotFoundError:
        return records, warnings
    except OSError as error:
        return records, [f"cannot list {folder}: {error.strerror}"]
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            warnings.append(f"{path} left out: {error.strerror}")
            continue
        with os.fdopen(fd, "rb") as handle:
            problem = private_problem(path, os.fstat(handle.fileno()), "file")
            if problem:
                warnings.append(f"{path} left out: {problem}")
                continue
            try:
                record = json.loads(handle.read(1 << 20).decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                warnings.append(f"{path} left out: not a babysitter's record")
                continue
        if isinstance(record, dict):
            records.append(record)
        else:
            warnings.append(f"{path} left out: not a babysitter's record")
    return records, warnings


class LookupModule(LookupBase):
    def run(self, terms: list, variables: dict | None = None, **kwargs: Any) -> list[Any]:
        if kwargs or len(terms) != 1 or not isinstance(terms[0], str) or not terms[0]:
            raise AnsibleLookupError("cloudtpu.pod.babysit_kept takes one term: the log folder")
        if not os.path.isabs(terms[0]):
            raise AnsibleLookupError(f"cloudtpu.pod.babysit_kept: {terms[0]!r} is not absolute")
        records, warnings = kept_records(terms[0])
        for warning in warnings:
            display.warning(f"babysit.yml's records: {warning}")
        return [records]
