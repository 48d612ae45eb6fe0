# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The ssh_config lines of port forwards to worker 0 (module_utils/tpu_ssh_forwards.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_forwards import (
    ForwardError,
    forward_lines,
)

DOCUMENTATION = r"""
name: ssh_config_forwards
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The ssh_config lines of port forwards to worker 0
description:
  - The options that playbooks/ssh_config.yml writes in the Host entry of the coordinator
    (worker 0) of each pod for C(tpu_ssh_config_forwards), one per line without indentation.
  - One C(LocalForward 127.0.0.1:LOCAL HOST:REMOTE) per forward, bound to the loopback address
    so that no other machine can use the tunnel, then C(ExitOnForwardFailure yes); nothing for
    no forward.
  - What a forward may be is the filter C(cloudtpu.pod.ssh_config_forwards_problem); a value it
    refuses fails here too.
positional: name
options:
  _input:
    description: The forwards, service names or mappings C({local, remote, host}).
    type: raw
    required: true
  name:
    description: The variable's name, for the message.
    type: str
    default: tpu_ssh_config_forwards
"""

EXAMPLES = r"""
- name: The lines of Jupyter and a port of one's own
  ansible.builtin.debug:
    msg: "{{ ['jupyter', {'local': 8080, 'remote': 80}] | cloudtpu.pod.ssh_config_forwards }}"
  # ['LocalForward 127.0.0.1:8888 localhost:8888', 'LocalForward 127.0.0.1:8080 localhost:80',
  #  'ExitOnForwardFailure yes']
"""

RETURN = r"""
_value:
  description: The lines, empty for no forward.
  type: list
  elements: str
"""


def ssh_config_forwards(value: Any, name: str = "tpu_ssh_config_forwards") -> list[str]:
    """The lines (see DOCUMENTATION); AnsibleFilterError when the value is refused."""
    try:
        return forward_lines(value, name)
    except ForwardError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """cloudtpu.pod.ssh_config_forwards."""

    def filters(self) -> dict[str, Any]:
        return {"ssh_config_forwards": ssh_config_forwards}
