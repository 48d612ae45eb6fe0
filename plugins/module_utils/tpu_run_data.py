# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A run's user text and secrets: what playbooks/run.yml and babysit.yml pass on as data.

* The user's own text for the workers: the command (``cmd``, and what Ansible's key=value parser
  cut from it), the local script's path and the run's environment (``tpu_run_env``). Given as
  extra variables (``-e``: key=value, JSON or YAML, ``@file``, as AWX gives a job's extra
  variables and survey answers) they are data, never templates: ``{{`` and ``}}`` reach the
  workers as typed and nothing in them is evaluated on the controller (playbooks/vars/run.yml
  reads them with the ``cloudtpu.pod.as_data`` lookup).
* :func:`as_data`: a value as plain data. On ansible-core 2.19 and later only text tagged as
  trusted is rendered as a template; a plain ``str`` is data wherever it goes (facts, templates,
  module arguments). This is what ``!unsafe`` or ``wrap_var`` did before 2.19.
* :data:`RUN_ID_RE` and :func:`run_id_problem`: what a run id is (logs.yml, babysit.yml).
* :data:`SECRET`: the variables whose every value is secret (``tpu_run_env`` carries tokens:
  ``HF_TOKEN``, ``WANDB_API_KEY``...). They are shown by their names only
  (:func:`secret_names`, :func:`shown`); the one task that holds the values (the run's wrapper
  script, which exports them) is ``no_log``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown, path_problem

SECRET = ("tpu_run_env",)
# A run's id, as run.yml makes it: its UTC start time and four hex digits.
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}\Z")
# Where a run's files may be on a worker besides the login home: a run's working folder, synced
# code, the copies of its logs (a bucket or share is mounted there).
WORK_ROOTS = ("/opt", "/srv", "/mnt")


def log_copy_problem(value: Any, name: str) -> str:
    """'' when ``value`` may be the folder on the workers that keeps copies of every run's log
    (tpu_run_log_copy, tpu_logs_copy): an absolute path inside one of WORK_ROOTS; else why not."""
    return path_problem(value, name, under=list(WORK_ROOTS))


def run_id_problem(value: Any, name: str) -> str:
    """Why ``value`` is not a run id for ``name`` (tpu_logs_run, tpu_babysit_run); ``''`` when
    it is."""
    if isinstance(value, str) and RUN_ID_RE.fullmatch(value):
        return ""
    return (
        f"{name} is {_shown(value)}: not a run id; allowed: a run id as run.yml prints it, "
        "such as 20261123T143000Z-ab12."
    )


def earlier_attempts(lines: Any, run_id: str) -> list[str]:
    """The runs that ``run_id`` continues (babysit.yml restarted it after them), oldest first,
    from run records (JSON lines, any worker's, unreadable ones left out): each record's
    C(continues) names the attempt before it. A loop or a record that is missing ends it."""
    records: dict[str, Mapping[str, Any]] = {}
    for line in lines if isinstance(lines, (list, tuple)) else []:
        try:
            record = json.loads(line) if isinstance(line, str) else line
        except ValueError:
            continue
        if isinstance(record, Mapping) and RUN_ID_RE.match(str(record.get("run_id") or "")):
            records.setdefault(str(record["run_id"]), record)
    chain: list[str] = []
    seen = {run_id}
    current = str((records.get(run_id) or {}).get("continues") or "")
    while RUN_ID_RE.match(current) and current not in seen:
        chain.append(current)
        seen.add(current)
        current = str((records.get(current) or {}).get("continues") or "")
    return chain[::-1]


def as_data(value: Any) -> Any:
    """A copy of ``value`` in which every string is a plain ``str`` (mappings become dicts,
    lists and tuples lists); numbers, booleans and None as they are."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {as_data(key): as_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_data(item) for item in value]
    return value


def secret_names(value: Any) -> list[str]:
    """The names a secret mapping holds, sorted; never its values."""
    if not isinstance(value, Mapping):
        return []
    return sorted(str(key) for key in value)


def shown(name: str, value: Any) -> str:
    """How a check shows the value of ``name``: its repr, or for a secret variable its type
    and the names it holds (a mapping) without any value."""
    if name not in SECRET:
        return repr(value)
    if isinstance(value, Mapping):
        return f"a mapping of {secret_names(value)} (values not shown: they are secret)"
    return f"{_kind(value)} (not shown: the values of {name} are secret)"


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a value that is not a mapping"
