# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The value of a variable as data: given with -e, never rendered as a template."""

from __future__ import annotations

DOCUMENTATION = r"""
name: as_data
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: A variable's value as data, never a template when given with -e
description:
  - Reads the variables of playbooks/run.yml that are the user's own text for the workers
    (C(cmd), C(tpu_run_script), C(tpu_run_env)) without rendering them.
  - ansible-core treats extra variables as templates (C(-e key=value), C(-e) with JSON or YAML,
    C(-e @file), and so AWX's extra variables and survey answers), so C({{ }}) in a command
    would be evaluated on the controller, a C(pipe) lookup included. A variable given
    that way is returned exactly as given, as data that is never rendered later either (in
    facts, templates or module arguments). C({{) and C(}}) reach the workers as typed.
  - A variable set anywhere else (a playbook, a vars file, the inventory, the C(vars) of
    C(import_playbook)) is Ansible code, rendered as usual, and its result returned as data. A
    literal C({{) there is written as everywhere in Ansible (C(!unsafe), C({% raw %})).
  - An undefined variable gives I(default).
options:
  _terms:
    description: The names of the variables, one value returned per name.
    required: true
    type: list
    elements: str
  default:
    description: The value of a variable that is not defined.
    type: raw
    default: null
"""

EXAMPLES = r"""
- name: The command as the user gave it (with -e "cmd='docker ps --format {{.Names}}'")
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.as_data', 'cmd') }}"
# "docker ps --format {{.Names}}"
"""

RETURN = r"""
_raw:
  description: The value of each variable, every string in it plain data.
  type: raw
"""

from typing import Any

from ansible.plugins.lookup import LookupBase
from ansible.utils.vars import load_extra_vars
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import as_data


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list:
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        # Ansible's own extra variables (loaded once per run, kept by load_extra_vars): the
        # values as parsed from the command line, before anything rendered them.
        given = load_extra_vars(self._loader)
        values = []
        for name in terms:
            if name in given:
                value = given[name]
            elif name in variables:
                value = self._templar.template(variables[name])
            else:
                value = self.get_option("default")
            values.append(as_data(value))
        return values
