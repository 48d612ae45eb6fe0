# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The request of playbooks/run.yml, checked and normalised before anything starts."""

from __future__ import annotations

import posixpath
import secrets
import time
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    boolean_problem,
    number_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import (
    WORK_ROOTS,
    as_data,
    log_copy_problem,
    secret_names,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_environment import (
    RunEnvironmentError,
    run_environment,
)

DOCUMENTATION = r"""
name: run_options
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Check and normalise the variables of playbooks/run.yml
description:
  - Takes the raw values of the run's variables (strings when they come from
    C(-e key=value)) and returns them typed, or C(ok=false) with a message that names every
    variable that is wrong, its value and what is allowed. It never fails itself, so the
    playbook can put the message into an assertion before anything changes.
  - Booleans accept what Ansible's C(bool) filter accepts (C(true), C(yes), C(on), C(1) and
    their opposites); numbers accept integers and strings of digits.
  - Exactly one of C(cmd) (a command text, run by bash with C(set -o pipefail)) and C(script)
    (a local file, copied to each worker; as every local path the playbooks take, without
    C(..), a system folder or a symbolic link on the way) must be given. C(raw_params) is what
    Ansible's key=value parser left over (C(-e cmd=python train.py) keeps only C(python));
    when it is set the command was cut and the request is refused with the forms that work.
  - With I(home), C(workdir) is resolved and checked for that host (a relative C(workdir) is
    below the home; it must be the home, inside it, or inside C(/opt), C(/srv) or C(/mnt);
    without one, C(sync_dest) if given, else the home). Numbers and paths go through the
    collection's shared checks (C(number_problem), C(path_problem), C(boolean_problem)).
  - C(log_copy) is empty or a folder on the workers inside C(/opt), C(/srv) or C(/mnt) (a
    mounted bucket or share), where the run keeps copies of its log, record and exit code,
    refreshed every C(log_copy_every) seconds.
  - C(env) and C(megascale_port) are checked as C(run_environment) checks them (the port of a
    multislice job's coordinator, whether or not the pod has several slices). The result holds
    the names of C(env) (C(env_names)), never its values, which are secret.
  - C(cmd), C(script) and C(label) are returned as data (plain strings) that Ansible never
    renders as a template, whatever they hold (C({{ }}) included).
positional: _input, home
options:
  _input:
    description: The raw values, keys C(cmd), C(script), C(raw_params), C(detach), C(timeout),
      C(tail), C(start_delay), C(unlock), C(sync), C(workdir), C(sync_dest), C(env),
      C(megascale_port), C(log_copy), C(log_copy_every).
    type: dict
    required: true
  home:
    description: The login user's home on the host, to resolve C(workdir).
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: Check the request
  ansible.builtin.set_fact:
    run: "{{ {'cmd': cmd | default(none), 'detach': tpu_run_detach} | cloudtpu.pod.run_options }}"
"""

RETURN = r"""
_value:
  description: The typed request with C(ok), C(message), C(errors), C(run_id) (UTC time and
    four hex digits), C(label) (the command, or C(script <name>)), C(script_name) and
    C(env_names) (the names of C(env), sorted).
  type: dict
"""

FORMS = (
    """write it as -e "cmd='python train.py --steps 10'" or as JSON """
    """-e '{"cmd": "python train.py --steps 10"}'"""
)
NUMBERS = {
    # name: (variable, default, minimum, maximum, what it is)
    "timeout": ("tpu_run_timeout", 3600, 1, 30 * 86400, "seconds an attached run may take"),
    "tail": ("tpu_run_tail", 20, 0, 10000, "output lines shown per worker"),
    "start_delay": (
        "tpu_run_start_delay",
        5,
        0,
        3600,
        "seconds between the start decision and the shared start time",
    ),
    "log_copy_every": (
        "tpu_run_log_copy_every",
        60,
        1,
        3600,
        "seconds between two copies of the log into tpu_run_log_copy",
    ),
}
BOOLEANS = {
    "detach": ("tpu_run_detach", False),
    "unlock": ("tpu_run_unlock", True),
    "sync": ("tpu_run_sync", False),
}


def _bool(value: Any, name: str, default: bool, errors: list[str]) -> bool:
    if value is None or value == "":
        return default
    problem = boolean_problem(value, name)
    if problem:
        errors.append(problem)
        return default
    return boolean(value)


def _number(value: Any, field: str, errors: list[str]) -> int:
    name, default, low, high, what = NUMBERS[field]
    if value is None or value == "":
        return default
    problem = number_problem(value, name, low, high)
    if problem:
        errors.append(f"{problem} ({what})")
        return default
    return int(float(value))


def _workdir(value: Any, home: str, errors: list[str]) -> str:
    """The working folder on a host with this home ('' when not given or without a home)."""
    if value is None or value == "":
        return ""
    text = str(value).strip()
    if not text or text.startswith("~") or ".." in text.split("/") or "\n" in text:
        errors.append(
            f"tpu_run_workdir is {value!r}: it contains '..' or '~'; allowed: an absolute path "
            "or one relative to the login home, without '..' or '~'"
        )
        return ""
    if not home:
        return ""
    path = posixpath.normpath(posixpath.join(home, text))
    if path != home:
        problem = path_problem(path, "tpu_run_workdir", under=[home, *WORK_ROOTS])
        if problem:
            errors.append(problem)
            return ""
    return path


def _log_copy(value: Any, errors: list[str]) -> str:
    """The folder on the workers that keeps copies of each run's log ('' when not given): an
    absolute path inside a work root (a bucket or share is mounted there), as a run's folder."""
    if value is None or value == "":
        return ""
    problem = log_copy_problem(value, "tpu_run_log_copy")
    if problem:
        errors.append(problem)
        return ""
    return str(value)


def run_options(raw: Mapping[str, Any], home: str = "") -> dict[str, Any]:
    """The typed request, or ok=false and every problem in one message."""
    errors: list[str] = []
    cmd = raw.get("cmd")
    script = raw.get("script")
    leftover = raw.get("raw_params")
    has_cmd = cmd is not None and cmd != ""
    has_script = script is not None and script != ""

    if leftover not in (None, ""):
        errors.append(
            f"cmd was cut by Ansible's key=value parsing: it kept {cmd!r} and dropped "
            f"{leftover!r}; {FORMS}"
        )
    if has_cmd and has_script:
        errors.append("give either cmd or tpu_run_script, not both")
    elif not has_cmd and not has_script:
        errors.append(
            "nothing to run: give cmd or tpu_run_script=path/to/script.sh (both are unset or "
            f"empty); {FORMS}"
        )
    if has_cmd and (not isinstance(cmd, str) or not cmd.strip()):
        errors.append(f"cmd must be a non-empty command text, got {cmd!r}; {FORMS}")

    script_path = ""
    if has_script and not has_cmd:
        problem = local_path_problem(script, "tpu_run_script", "file")
        if problem:
            errors.append(problem)
        else:
            script_path = local_path(script)

    result: dict[str, Any] = {
        field: _bool(raw.get(field), name, default, errors)
        for field, (name, default) in BOOLEANS.items()
    }
    result.update({field: _number(raw.get(field), field, errors) for field in NUMBERS})
    workdir = _workdir(raw.get("workdir"), home, errors)
    result["log_copy"] = _log_copy(raw.get("log_copy"), errors)
    try:
        # the names only: every value of tpu_run_env is secret (this result is a fact)
        result["env_names"] = secret_names(
            run_environment(raw.get("env"), None, raw.get("megascale_port"))
        )
    except RunEnvironmentError as exc:
        errors.append(str(exc))
        result["env_names"] = []

    script_name = posixpath.basename(script_path) if script_path else ""
    if script_name.startswith("."):
        script_name = "_" + script_name
    if home and not workdir:
        workdir = str(raw.get("sync_dest") or "") or home
    result.update(
        {
            "ok": not errors,
            "errors": errors,
            "message": "; ".join(errors) if errors else "ok",
            # the user's text as data: never rendered as a template on the way to the workers
            "cmd": as_data(cmd.strip("\n")) if has_cmd and isinstance(cmd, str) else "",
            "script": as_data(script_path),
            "script_name": as_data(script_name),
            "label": as_data(cmd if has_cmd else f"script: {script_name}"),
            "workdir": workdir,
            "run_id": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2),
        }
    )
    return result


class FilterModule:
    """The run_options filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_options": run_options}
