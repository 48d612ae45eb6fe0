# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The environment a run's command gets on top of the venv and the framework's env file.

Assembled here once: the user's variables (``tpu_run_env``), checked, and on a worker of a
multislice job the variables computed from the pod (``MEGASCALE_*`` and
``JAX_COORDINATOR_ADDRESS``). The filters run_environment (what run.yml exports) and run_options
(the run's request, checked before anything starts) read it, so both accept and refuse the same
values. A refusal is a :class:`RunEnvironmentError` whose message names the variables, never a
value (every value of ``tpu_run_env`` is secret).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import number_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import (
    JAX_COORDINATOR_PORT,
    host_port,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import shown

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
MEGASCALE_PORT = 8080  # the port a multislice job's coordinator listens on, by default
POD_NAMES = (
    "MEGASCALE_COORDINATOR_ADDRESS",
    "MEGASCALE_NUM_SLICES",
    "MEGASCALE_SLICE_ID",
    "MEGASCALE_PORT",
    "JAX_COORDINATOR_ADDRESS",
)


class RunEnvironmentError(ValueError):
    """A run environment that is refused; the message names the variables and what is allowed."""


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _megascale_port(value: Any) -> int:
    if value is None or value == "":
        return MEGASCALE_PORT
    problem = number_problem(value, "tpu_run_megascale_port", 1, 65535)
    if not problem and int(float(value)) == JAX_COORDINATOR_PORT:
        problem = (
            f"tpu_run_megascale_port is {value!r}: {JAX_COORDINATOR_PORT} is the JAX "
            "coordinator's port on the same host; allowed: another port from 1 to 65535."
        )
    if problem or isinstance(value, bool):
        raise RunEnvironmentError(problem or f"tpu_run_megascale_port is {value!r}: not a port")
    return int(float(value))


def pod_environment(pod: Mapping[str, Any] | None, megascale_port: Any = None) -> dict[str, str]:
    """The variables a worker of a multislice job needs ({} for a single slice)."""
    port = _megascale_port(megascale_port)
    pod = pod or {}
    try:
        slices = int(pod.get("num_slices") or 1)
        slice_id = int(pod.get("slice_id") or 0)
    except (TypeError, ValueError):
        raise RunEnvironmentError(
            f"the pod's num_slices {pod.get('num_slices')!r} and slice_id "
            f"{pod.get('slice_id')!r} must be whole numbers"
        ) from None
    if slices <= 1:
        return {}
    address = str(pod.get("job_coordinator_ip") or "").strip()
    if not address or not 0 <= slice_id < slices:
        raise RunEnvironmentError(
            f"this worker is slice {slice_id} of {slices} but its multislice job has "
            f"{'no coordinator address' if not address else 'no such slice'}: slice 0 must be "
            "in the inventory (tpu_pod_job_coordinator_ip) and the slice id below the count"
        )
    return {
        "MEGASCALE_COORDINATOR_ADDRESS": host_port(address, port),
        "MEGASCALE_NUM_SLICES": str(slices),
        "MEGASCALE_SLICE_ID": str(slice_id),
        "MEGASCALE_PORT": str(port),
        # the port JAX's TPU cluster detection puts after the MEGASCALE coordinator's host
        "JAX_COORDINATOR_ADDRESS": host_port(address, JAX_COORDINATOR_PORT),
    }


def run_environment(
    extra: Any, pod: Mapping[str, Any] | None = None, megascale_port: Any = None
) -> dict[str, str]:
    """The variables to export, checked; raises RunEnvironmentError naming what is wrong."""
    if extra is None or extra == "":
        extra = {}
    if not isinstance(extra, Mapping):
        raise RunEnvironmentError(
            "tpu_run_env must be a mapping of variable names to values, got "
            f"{shown('tpu_run_env', extra)}; "
            """example: -e '{"tpu_run_env": {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}}'"""
        )
    bad = [str(k) for k in extra if not isinstance(k, str) or not NAME_RE.match(k)]
    if bad:
        raise RunEnvironmentError(
            f"tpu_run_env has names that are not shell variable names: {bad}; allowed: "
            "letters, digits and '_', not starting with a digit"
        )
    nested = [k for k, v in extra.items() if isinstance(v, (Mapping, list, tuple))]
    if nested:
        raise RunEnvironmentError(
            f"tpu_run_env values must be strings, numbers or booleans; {nested} are not"
        )
    computed = pod_environment(pod, megascale_port)
    clash = sorted(set(extra) & set(computed))
    if clash:
        raise RunEnvironmentError(
            f"tpu_run_env sets {clash}, which run.yml computes for every worker of a multislice "
            "job; leave them out (the port: -e tpu_run_megascale_port=PORT)"
        )
    return {**{k: _text(v) for k, v in extra.items() if v is not None}, **computed}
