# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The request of playbooks/logs.yml, checked and typed before any worker is asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    boolean_problem,
    number_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import (
    log_copy_problem,
    run_id_problem,
)

DOCUMENTATION = r"""
name: logs_options
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Check and type the variables of playbooks/logs.yml
description:
  - Takes the raw values (strings when they come from C(-e key=value)) and returns them typed,
    or C(ok=false) with one message that names every wrong variable, its value and what is
    allowed. Never fails itself, so the playbook refuses before it asks any worker.
  - C(tail) (C(tpu_logs_tail)) is a number of lines from 0 to 99999 (C(number_problem));
    C(fetch) (C(tpu_logs_fetch)) true or false (C(boolean_problem)); C(run) (C(tpu_logs_run))
    empty or a run id; C(dest) (C(tpu_logs_dest), default C(./.cache/runs)) a folder on this
    machine, or one to make, without C(..), a system folder or a symbolic link on the way (as
    every local path the playbooks take); C(copy) (C(tpu_logs_copy)) empty or the folder on the
    workers where runs keep copies of their logs (C(tpu_run_log_copy)), inside C(/opt), C(/srv)
    or C(/mnt).
positional: _input
options:
  _input:
    description: The raw values, keys C(tail), C(fetch), C(run), C(dest), C(copy).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the request
  ansible.builtin.set_fact:
    request: "{{ {'tail': tpu_logs_tail | default(none)} | cloudtpu.pod.logs_options }}"
# {"ok": true, "tail": 0, "fetch": true, "run": "", "dest": "/home/me/.cache/runs", ...}
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(errors), C(tail) (an int), C(fetch) (a bool), C(run),
    C(dest) (absolute) and C(copy).
  type: dict
"""

DEST = "./.cache/runs"


def logs_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The typed request, or ok=false and every problem in one message."""
    tail, fetch = raw.get("tail"), raw.get("fetch")
    tail = 0 if tail is None or tail == "" else tail
    fetch = True if fetch is None or fetch == "" else fetch
    run = raw.get("run")
    run = "" if run is None else run
    dest = raw.get("dest")
    dest = DEST if dest is None or dest == "" else dest
    copy = raw.get("copy")
    copy = "" if copy is None else copy
    problems = [
        number_problem(tail, "tpu_logs_tail", 0, 99999),
        boolean_problem(fetch, "tpu_logs_fetch"),
        run_id_problem(run, "tpu_logs_run") if run != "" else "",
        local_path_problem(dest, "tpu_logs_dest", "new folder"),
        log_copy_problem(copy, "tpu_logs_copy") if copy != "" else "",
    ]
    errors = [problem for problem in problems if problem]
    return {
        "ok": not errors,
        "errors": errors,
        "message": " ".join(errors) if errors else "ok",
        "tail": 0 if errors else int(float(tail)),
        "fetch": True if errors else boolean(fetch),
        "run": run,
        "dest": "" if errors else local_path(dest),
        "copy": "" if errors else copy,
    }


class FilterModule:
    """The logs_options filter."""

    def filters(self) -> dict[str, Any]:
        return {"logs_options": logs_options}
