# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The options of playbooks/babysit.yml, checked and typed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_babysit import (
    TEARDOWN_DEFAULT,
    teardown_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    number_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import run_id_problem

DOCUMENTATION = r"""
name: babysit_options
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Check and type the variables of playbooks/babysit.yml
description:
  - Takes the raw values (strings when they come from C(-e key=value)) and returns them typed,
    or C(ok=false) with one message that names every wrong variable, its value and what is
    allowed. Never fails itself.
  - Numbers go through the collection's shared check (C(number_problem)).
    C(max_recoveries) is 0 to 1000, C(interval) 1 to 3600 s,
    C(backoff_max) 0 to 86400 s, C(timeout) 60 s to 90 days.
  - C(run) is empty or a run id. C(log_dir) (default C(./.cache/babysit)) is a folder on this
    machine, or one to make, without C(..), a system folder or a symbolic link on the way (as
    every local path the playbooks take).
  - C(teardown) (tpu_babysit_teardown) is C(never) (the default), C(on_success) or C(always),
    what babysit.yml does with the run's nodes when it stops watching (the
    C(cloudtpu.pod.babysit_teardown) filter decides).
  - A C(cmd) is refused (the babysitter restarts the recorded command), and so is
    C(tpu_run_detach) false.
options:
  _input:
    description: Keys C(max_recoveries), C(interval), C(backoff_max), C(timeout), C(run),
      C(log_dir), C(teardown), C(cmd), C(detach).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the variables
  ansible.builtin.set_fact:
    options: >-
      {{ {'interval': tpu_babysit_interval | default(none)} | cloudtpu.pod.babysit_options }}
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(errors), the typed numbers, C(run), C(log_dir) (absolute) and
    C(teardown).
  type: dict
"""

# The most recoveries one babysit.yml may make (its rounds are a loop: babysit_rounds).
MAX_RECOVERIES = 1000
NUMBERS = {
    # field: (variable, default, minimum, maximum, integer, what it is)
    "max_recoveries": (
        "tpu_babysit_max_recoveries",
        3,
        0,
        MAX_RECOVERIES,
        True,
        "recoveries before the babysitter gives up",
    ),
    "interval": ("tpu_babysit_interval", 30, 1, 3600, True, "seconds between two checks"),
    "backoff_max": (
        "tpu_babysit_backoff_max",
        600,
        0,
        86400,
        True,
        "longest pause in seconds before a recovery",
    ),
    "timeout": (
        "tpu_babysit_timeout",
        7 * 86400,
        60,
        90 * 86400,
        True,
        "seconds the babysitter watches in all",
    ),
}


def babysit_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The typed options, or ok=false and every problem in one message."""
    errors: list[str] = []
    result: dict[str, Any] = {}
    for field, (name, default, low, high, integer, what) in NUMBERS.items():
        value = raw.get(field)
        if value is None or value == "":
            result[field] = default
            continue
        problem = number_problem(value, name, low, high, integer=integer)
        if problem:
            errors.append(f"{problem} ({what})")
            result[field] = default
        else:
            result[field] = int(float(value))
    run = raw.get("run")
    run = "" if run is None else run
    if run != "" and run_id_problem(run, "tpu_babysit_run"):
        errors.append(run_id_problem(run, "tpu_babysit_run"))
    result["run"] = run
    log_dir = raw.get("log_dir")
    log_dir = "./.cache/babysit" if log_dir is None or log_dir == "" else log_dir
    problem = local_path_problem(log_dir, "tpu_babysit_log_dir", "new folder")
    if problem:
        errors.append(problem)
    result["log_dir"] = "" if problem else local_path(log_dir)
    teardown = raw.get("teardown")
    problem = teardown_problem(teardown)
    if problem:
        errors.append(problem)
    result["teardown"] = teardown if teardown and not problem else TEARDOWN_DEFAULT
    if raw.get("cmd") not in (None, ""):
        errors.append(
            f"cmd is {_shown(raw['cmd'])}: babysit.yml takes no cmd, it restarts the command the "
            "run recorded; allowed: no cmd (start a run with playbooks/run.yml "
            "-e tpu_run_detach=true first)"
        )
    detach = raw.get("detach")
    key = detach.lower().strip() if isinstance(detach, str) else detach
    if detach not in (None, "") and (key in BOOLEANS_FALSE or key not in BOOLEANS_TRUE):
        errors.append(
            f"tpu_run_detach is {detach!r}: a babysat run is always detached; allowed: true, or "
            "leave it unset"
        )
    result.update(ok=not errors, errors=errors, message="; ".join(errors) or "ok")
    return result


class FilterModule:
    """cloudtpu.pod.babysit_options."""

    def filters(self) -> dict[str, Any]:
        return {"babysit_options": babysit_options}
