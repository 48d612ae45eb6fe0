# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The framework role's requirement specifiers and command lines as a filter."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import specs

DOCUMENTATION = r"""
name: framework_specs
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The framework role's requirement specifiers and install command lines
description:
  - Takes what C(cloudtpu.pod.framework_installer) returned with the role's options and what the
    package index said of the newest release (with C(latest)), and returns the specifiers and
    the command lines of roles/framework/tasks/install.yml.
  - torch_xla comes with C(torch==<torch_version>), or without one C(torch~=X.Y.0) of the
    torch_xla release series.
positional: _input, framework, version
options:
  _input:
    description: What C(cloudtpu.pod.framework_installer) returned.
    type: dict
    required: true
  framework:
    description: C(jax), C(torch_xla) or C(none).
    type: str
    required: true
  version:
    description: C(latest) or a release.
    type: str
    required: true
  torch_version:
    description: The torch release, or empty.
    type: str
    default: ""
  tpu_info:
    description: Install tpu-info with the framework.
    type: bool
    default: true
  extra:
    description: More requirement specifiers.
    type: list
    elements: str
    default: []
  requirements_file:
    description: A requirements file (copied into the venv), or empty.
    type: str
    default: ""
  venv:
    description: The venv's folder.
    type: str
    default: ""
  newest:
    description: What the index said of the newest release (the output of C(newest)).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Work out the specifiers
  ansible.builtin.set_fact:
    plan: "{{ how | cloudtpu.pod.framework_specs('jax', '0.6.2') }}"
# plan.specs == ['jax[tpu]==0.6.2', 'tpu-info']
"""

RETURN = r"""
_value:
  description:
    - C(pin) (the release, empty when the index named none), C(tools), C(specs), C(reqs) (the
      specifiers and C(-r FILE)), C(install) (the whole command), C(dry_run) and C(pin_only)
      (the pinned release and its tools are all there is to install, with no extras, no
      requirements file, not C(latest)).
  type: dict
"""


def framework_specs(how: dict, *args: Any, **kwargs: Any) -> dict:
    """cloudtpu.pod.framework_specs."""
    try:
        return specs(how, *args, **kwargs)
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"cloudtpu.pod.framework_specs: {error!r}") from error


class FilterModule:
    """cloudtpu.pod.framework_specs."""

    def filters(self) -> dict[str, Any]:
        return {"framework_specs": framework_specs}
