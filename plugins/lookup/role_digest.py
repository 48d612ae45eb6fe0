# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The digest of the calling role's inputs, for its converged fast path (cloudtpu.pod.tpu_state)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: role_digest
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: The digest of the calling role's inputs, for its converged fast path
description:
  - Called from a role's variables. Takes the value of every option of the role's argument spec
    (C(meta/argument_specs.yml), entry point C(main); an option without a value counts as null),
    the host's facts and O(extra), and returns what the C(cloudtpu.pod.state_digest) filter
    returns for them, a sha256 that also covers the collection's roles and plugins.
  - M(cloudtpu.pod.tpu_state) records it after the role's tasks succeeded; a run whose digest
    differs from the record runs the tasks again.
options:
  extra:
    description: Anything else the role's result depends on (the login user, a pod's server).
    type: raw
"""

EXAMPLES = r"""
# roles/base/vars/main.yml
tpu_base__digest: "{{ lookup('cloudtpu.pod.role_digest', extra=[tpu_base__user]) }}"
"""

RETURN = r"""
_raw:
  description: The sha256, in hex.
  type: list
  elements: str
"""

from typing import Any

import yaml
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.cloudtpu.pod.plugins.module_utils.state_digest import (
    role_options,
    state_digest,
)


class LookupModule(LookupBase):
    def run(self, terms: list, variables: dict | None = None, **kwargs: Any) -> list[str]:
        unknown = sorted(set(kwargs) - {"extra"})
        if unknown:
            raise AnsibleLookupError(f"cloudtpu.pod.role_digest takes only extra=, not {unknown}")
        variables = variables or {}
        role_path = self._templar.template(variables.get("role_path") or "")
        if not role_path:
            raise AnsibleLookupError("cloudtpu.pod.role_digest works only in a role's variables")
        try:
            options = role_options(role_path, yaml.safe_load)
        except (OSError, yaml.YAMLError) as error:
            raise AnsibleLookupError(f"cloudtpu.pod.role_digest: {error}") from error
        values = {
            name: self._templar.template(variables[name]) if name in variables else None
            for name in options
        }
        facts = self._templar.template(variables.get("ansible_facts") or {})
        return [state_digest(values, role_path, facts=facts, extra=kwargs.get("extra"))]
