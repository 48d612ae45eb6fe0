# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The digest of a role's inputs for cloudtpu.pod.tpu_state: its variables, the facts that
shape what it writes, and its own code (the role's files and the collection's plugins)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: state_digest
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The digest of a role's inputs, for its converged fast path
description:
  - Returns a sha256 of the role's variables (O(_input), every option of its argument spec),
    of the facts that decide what it writes (distribution and its release and version,
    architecture, OS family, service manager), of O(extra) (what the role works out from the
    inventory, such as a pod's server and addresses), and of its code. The code is every file of
    the collection's C(roles) and C(plugins) folders (roles import each other), so a new release
    of the collection sends every role through its tasks once.
  - M(cloudtpu.pod.tpu_state) records it after the role's tasks succeeded; a run whose digest
    differs from the record runs the tasks again.
  - The collection's roles take it from the C(cloudtpu.pod.role_digest) lookup, which reads every
    option of the calling role's argument spec and runs the same code. This filter is for a role
    or play that names its variables itself.
positional: _input, role_path
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
  role_path:
    description: The role's folder (C(role_path)); the collection is found from it.
    type: str
    required: true
  facts:
    description: The host's C(ansible_facts).
    type: dict
    default: {}
  extra:
    description: Anything else the role's result depends on.
    type: raw
"""

EXAMPLES = r"""
# In a role's vars/main.yml: the digest of two of its variables, the facts and the login user.
my_role__digest: >-
  {{ {'my_role_packages': my_role_packages, 'my_role_port': my_role_port}
     | cloudtpu.pod.state_digest(role_path, facts=ansible_facts,
                                 extra=lookup('cloudtpu.pod.login')) }}
"""

RETURN = r"""
_value:
  description: A sha256 in hex.
  type: str
"""

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.state_digest import state_digest


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"state_digest": state_digest}
