# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The problems of the calling role's variables, for its preflight (cloudtpu.pod.tpu_state)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: role_problems
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: The problems of a role's variables, from the collection's table of rules
description:
  - Called once from a role's preflight, with the role's short name. Runs that role's rules
    (C(plugins/module_utils/tpu_role_rules.py), over the collection's shared checks of numbers,
    paths, booleans, networks and names) and returns every problem found, each one sentence that
    names the variable, shows its value (never a secret's) and says what is allowed; an empty
    list when the variables are right.
  - A rule reads only the role's options (its C(meta/argument_specs.yml), entry point C(main)),
    the login contract (the C(cloudtpu.pod.login) lookup), a few of the role's own facts that
    the table names, and the host's name and C(hostvars); a rule that reads anything else is an
    error of the table. Each variable is resolved when a rule first reads it.
  - A role's rules come in stages (the nfs role looks at the pod only once its variables are
    right); the problems of the first stage that has any are returned.
options:
  _terms:
    description:
      - The role's short name (C(apt), C(base), C(python), C(framework), C(tcmalloc), C(libtpu),
        C(remote_shell), C(nfs), C(storage)), or a table of the role's checks on the host after
        its probe, named C(<role>:<what>) (C(base:host)).
    required: true
    type: list
    elements: str
"""

EXAMPLES = r"""
# roles/base/tasks/preflight.yml
- name: Check the role's variables and look at its whole state in one call
  cloudtpu.pod.tpu_state:
    role: base
    problems: "{{ query('cloudtpu.pod.role_problems', 'base') }}"
"""

RETURN = r"""
_raw:
  description: The problems, one sentence each; empty when every rule passes.
  type: list
  elements: str
"""

from typing import Any

import yaml
from ansible.errors import AnsibleLookupError
from ansible.plugins.loader import lookup_loader
from ansible.plugins.lookup import LookupBase
from ansible_collections.cloudtpu.pod.plugins.module_utils.state_digest import role_options
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_checks import (
    RoleValues,
    readable_names,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_rules import (
    INTERNAL,
    RULES,
    role_problems,
)


class LookupModule(LookupBase):
    def run(self, terms: list, variables: dict | None = None, **kwargs: Any) -> list[str]:
        if len(terms) != 1 or terms[0] not in RULES or kwargs:
            raise AnsibleLookupError(
                f"cloudtpu.pod.role_problems takes one role name, one of {sorted(RULES)};"
                f" got {terms} {kwargs or ''}"
            )
        table = terms[0]
        role = table.split(":")[0]
        variables = variables or {}
        role_path = self._templar.template(variables.get("role_path") or "")
        if not role_path:
            raise AnsibleLookupError("cloudtpu.pod.role_problems works only in a role's tasks")
        try:
            options = role_options(role_path, yaml.safe_load)
        except (OSError, yaml.YAMLError) as error:
            raise AnsibleLookupError(f"cloudtpu.pod.role_problems: {error}") from error
        allowed = readable_names(options, INTERNAL.get(table, ()))

        def get(name: str) -> Any:
            if name not in allowed:
                raise AnsibleLookupError(
                    f"cloudtpu.pod.role_problems: the {role} rules read {name}, which is not an"
                    " option of the role's argument spec nor one of its facts the table names"
                )
            if name not in variables:
                raise KeyError(name)
            if name in ("hostvars", "inventory_hostname"):
                return variables[name]  # Ansible's own, nothing to resolve
            return self._templar.template(variables[name])

        def login() -> Any:
            lookup = lookup_loader.get(
                "cloudtpu.pod.login", loader=self._loader, templar=self._templar
            )
            return lookup.run([], variables=variables)[0]

        return role_problems(table, RoleValues(get, login))
