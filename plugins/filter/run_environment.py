# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The environment a run's command gets on top of the venv and the framework's env file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: run_environment
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The environment variables playbooks/run.yml exports for a run
description:
  - The one place where the environment of a run is assembled. The run's wrapper script first
    activates the login user's venv and reads the framework's C(<venv>/framework.env) (written
    by the C(cloudtpu.pod.framework) role), then exports what this filter returns.
  - Today that is C(tpu_run_env), the user's own variables. Variables that depend on the pod
    (for example a multislice job's C(MEGASCALE_*)) belong here too, computed from the pod
    passed as I(pod).
  - Names must be shell variable names; values become strings (booleans as C(true)/C(false)).
positional: _input, pod
options:
  _input:
    description: The user's variables (C(tpu_run_env)), a mapping of names to values.
    type: dict
    required: true
  pod:
    description: The host's pod (the C(cloudtpu.pod.pod) lookup); reserved for pod-derived
      variables, unused today.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: The variables the run exports
  ansible.builtin.set_fact:
    run_env: "{{ tpu_run_env | cloudtpu.pod.run_environment }}"
# {"XLA_FLAGS": "--xla_dump_to=/tmp/x"} -> {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
"""

RETURN = r"""
_value:
  description: Names to string values, in the order given.
  type: dict
"""

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run_environment(extra: Any, pod: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The variables to export, checked; raises AnsibleFilterError naming what is wrong."""
    if extra is None or extra == "":
        extra = {}
    if not isinstance(extra, Mapping):
        raise AnsibleFilterError(
            f"tpu_run_env must be a mapping of variable names to values, got {extra!r}; "
            """example: -e '{"tpu_run_env": {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}}'"""
        )
    bad = [str(k) for k in extra if not isinstance(k, str) or not NAME_RE.match(k)]
    if bad:
        raise AnsibleFilterError(
            f"tpu_run_env has names that are not shell variable names: {bad} "
            "(letters, digits and '_', not starting with a digit)"
        )
    nested = [k for k, v in extra.items() if isinstance(v, (Mapping, list, tuple))]
    if nested:
        raise AnsibleFilterError(
            f"tpu_run_env values must be strings, numbers or booleans; {nested} are not"
        )
    return {k: _text(v) for k, v in extra.items() if v is not None}


class FilterModule:
    """The run_environment filter."""

    def filters(self) -> dict[str, Any]:
        return {"run_environment": run_environment}
