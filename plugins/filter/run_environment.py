# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The environment a run's command gets on top of the venv and the framework's env file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import number_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import (
    JAX_COORDINATOR_PORT,
    host_port,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import shown

DOCUMENTATION = r"""
name: run_environment
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The environment variables playbooks/run.yml exports for a run
description:
  - The one place where the environment of a run is assembled. The run's wrapper script first
    activates the login user's venv and reads the framework's C(<venv>/framework.env) (written
    by the C(cloudtpu.pod.framework) role), then exports what this filter returns.
  - That is C(tpu_run_env), the user's own variables, and what depends on the pod passed as
    I(pod) (the C(cloudtpu.pod.pod) lookup).
  - On a worker of a multislice job (C(num_slices) above 1) the run gets
    C(MEGASCALE_COORDINATOR_ADDRESS) (the job coordinator's address and I(megascale_port)),
    C(MEGASCALE_NUM_SLICES), C(MEGASCALE_SLICE_ID) and C(MEGASCALE_PORT), which libtpu reads to
    join the slices, and C(JAX_COORDINATOR_ADDRESS), the same host on port 8476, the address
    C(jax.distributed.initialize()) reads first, and the one JAX's own TPU detection derives from
    C(MEGASCALE_COORDINATOR_ADDRESS). JAX then numbers its processes slice by slice (worker id +
    slice id x workers per slice). A single slice gets none of these (JAX finds its pod itself).
  - I(megascale_port) must be a port from 1 to 65535 other than 8476; C(tpu_run_env) may not set
    the variables computed here on a multislice worker (they would disagree with the other
    workers); wrong values are refused with a message that names them.
  - Names must be shell variable names; values become strings (booleans as C(true)/C(false)).
  - Every value of C(tpu_run_env) is secret (tokens such as C(HF_TOKEN)); the errors name the
    variables, never a value, and playbooks/run.yml exports them in a C(no_log) task.
positional: _input, pod, megascale_port
options:
  _input:
    description: The user's variables (C(tpu_run_env)), a mapping of names to values.
    type: dict
    required: true
  pod:
    description: The host's pod (the C(cloudtpu.pod.pod) lookup), with C(num_slices),
      C(slice_id) and C(job_coordinator_ip).
    type: dict
    default: {}
  megascale_port:
    description: The port of the multislice job's coordinator (C(tpu_run_megascale_port) in
      playbooks/run.yml).
    type: int
    default: 8080
"""

EXAMPLES = r"""
- name: The variables the run exports
  ansible.builtin.set_fact:
    run_env: "{{ tpu_run_env | cloudtpu.pod.run_environment }}"
# {"XLA_FLAGS": "--xla_dump_to=/tmp/x"} -> {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}

- name: The variables of a run on a worker of a multislice job
  ansible.builtin.set_fact:
    run_env: "{{ tpu_run_env | cloudtpu.pod.run_environment(lookup('cloudtpu.pod.pod'), 8080) }}"
# slice 1 of 2, job coordinator 10.0.0.2 ->
# {"JAX_COORDINATOR_ADDRESS": "10.0.0.2:8476", "MEGASCALE_COORDINATOR_ADDRESS": "10.0.0.2:8080",
#  "MEGASCALE_NUM_SLICES": "2", "MEGASCALE_PORT": "8080", "MEGASCALE_SLICE_ID": "1"}
"""

RETURN = r"""
_value:
  description: Names to string values, in the order given.
  type: dict
"""

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
MEGASCALE_PORT = 8080  # the port a multislice job's coordinator listens on, by default
POD_NAMES = (
    "MEGASCALE_COORDINATOR_ADDRESS",
    "MEGASCALE_NUM_SLICES",
    "MEGASCALE_SLICE_ID",
    "MEGASCALE_PORT",
    "JAX_COORDINATOR_ADDRESS",
)


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
        raise AnsibleFilterError(problem or f"tpu_run_megascale_port is {value!r}: not a port")
    return int(float(value))


def pod_environment(pod: Mapping[str, Any] | None, megascale_port: Any = None) -> dict[str, str]:
    """The variables a worker of a multislice job needs ({} for a single slice)."""
    port = _megascale_port(megascale_port)
    pod = pod or {}
    try:
        slices = int(pod.get("num_slices") or 1)
        slice_id = int(pod.get("slice_id") or 0)
    except (TypeError, ValueError):
        raise AnsibleFilterError(
            f"the pod's num_slices {pod.get('num_slices')!r} and slice_id "
            f"{pod.get('slice_id')!r} must be whole numbers"
        ) from None
    if slices <= 1:
        return {}
    address = str(pod.get("job_coordinator_ip") or "").strip()
    if not address or not 0 <= slice_id < slices:
        raise AnsibleFilterError(
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
    """The variables to export, checked; raises AnsibleFilterError naming what is wrong."""
    if extra is None or extra == "":
        extra = {}
    if not isinstance(extra, Mapping):
        raise AnsibleFilterError(
            "tpu_run_env must be a mapping of variable names to values, got "
            f"{shown('tpu_run_env', extra)}; "
            """example: -e '{"tpu_run_env": {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}}'"""
        )
    bad = [str(k) for k in extra if not isinstance(k, str) or not NAME_RE.match(k)]
    if bad:
        raise AnsibleFilterError(
            f"tpu_run_env has names that are not shell variable names: {bad}; allowed: "
            "letters, digits and '_', not starting with a digit"
        )
    nested = [k for k, v in extra.items() if isinstance(v, (Mapping, list, tuple))]
    if nested:
        raise AnsibleFilterError(
            f"tpu_run_env values must be strings, numbers or booleans; {nested} are not"
        )
    computed = pod_environment(pod, megascale_port)
    clash = sorted(set(extra) & set(computed))
    if clash:
        raise AnsibleFilterError(
            f"tpu_run_env sets {clash}, which run.yml computes for every worker of a multislice "
            "job; leave them out (the port: -e tpu_run_megascale_port=PORT)"
        )
    return {**{k: _text(v) for k, v in extra.items() if v is not None}, **computed}


class FilterModule:
    """The run_environment filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_environment": run_environment}
