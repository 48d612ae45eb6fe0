# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The environment a run's command gets (module_utils/tpu_run_environment.py) as a filter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_environment import (
    RunEnvironmentError,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_environment import (
    run_environment as environment,
)

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


def run_environment(
    extra: Any, pod: Mapping[str, Any] | None = None, megascale_port: Any = None
) -> dict[str, str]:
    """The variables to export, checked; raises AnsibleFilterError naming what is wrong."""
    try:
        return environment(extra, pod, megascale_port)
    except RunEnvironmentError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """The run_environment filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_environment": run_environment}
