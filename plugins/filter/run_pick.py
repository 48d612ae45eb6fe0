# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which run playbooks/logs.yml fetches, and where to."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import local_path
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import (
    RUN_ID_RE,
    run_id_problem,
)

DOCUMENTATION = r"""
name: run_pick
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Choose the run whose logs to fetch and the local folder for them
description:
  - Takes the run ids found on each worker (the folder names under the login user's run-log
    folder) and returns the one asked for (C(tpu_logs_run)) or, by default, the newest one
    found on any worker (run ids start with their UTC start time, so they sort by time).
  - Names that are not run ids are ignored; a requested id must be a run id and must exist on
    some worker. Never fails itself; C(ok=false) comes with a message.
  - The local folder is C(<dest>/<run_id>), with I(dest) made absolute from the current folder
    (default C(./.cache/runs)); C(cloudtpu.pod.logs_options) checks I(dest) first.
positional: _input, requested, dest
options:
  _input:
    description: The run ids found, one list per worker.
    type: list
    elements: raw
    required: true
  requested:
    description: The run id asked for, empty for the newest.
    type: str
    default: ''
  dest:
    description: The local folder that holds one folder per run.
    type: str
    default: ./.cache/runs
"""

EXAMPLES = r"""
- name: The newest run
  ansible.builtin.set_fact:
    pick: "{{ [['20261123T143000Z-ab12'], ['20261123T143000Z-ab12']] | cloudtpu.pod.run_pick }}"
# {"ok": true, "run_id": "20261123T143000Z-ab12",
#  "dest": "/home/me/.cache/runs/20261123T143000Z-ab12"}
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(run_id), C(dest) (absolute local folder for this run) and
    C(runs) (every run id found, newest first).
  type: dict
"""


def run_pick(
    found: Iterable[Any], requested: str = "", dest: str = "./.cache/runs"
) -> dict[str, Any]:
    """The run to fetch and where its logs go on this machine."""
    runs: set[str] = set()
    for entry in found or []:
        names = entry if isinstance(entry, (list, tuple)) else str(entry or "").split()
        runs.update(str(n).strip() for n in names if RUN_ID_RE.match(str(n).strip()))
    ordered = sorted(runs, reverse=True)
    requested = str(requested or "").strip()
    result: dict[str, Any] = {"ok": False, "run_id": "", "dest": "", "runs": ordered}
    if requested and run_id_problem(requested, "tpu_logs_run"):
        result["message"] = run_id_problem(requested, "tpu_logs_run")
        return result
    if not ordered:
        result["message"] = (
            "no run found on the workers: run.yml records each run under ~/cloudtpu-runs/ of "
            "the login user; start one with playbooks/run.yml"
        )
        return result
    if requested and requested not in runs:
        result["message"] = (
            f"run {requested} is not on any of these workers; the newest runs there are "
            f"{', '.join(ordered[:5])}"
        )
        return result
    run_id = requested or ordered[0]
    # the folder as logs_options checked it (tpu_logs_dest)
    folder = os.path.join(local_path(str(dest or "./.cache/runs")), run_id)
    result.update({"ok": True, "message": "ok", "run_id": run_id, "dest": folder})
    return result


class FilterModule:
    """The run_pick filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_pick": run_pick}
