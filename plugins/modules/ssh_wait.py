#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Documentation of the action plugin cloudtpu.pod.ssh_wait (plugins/action/ssh_wait.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: ssh_wait
short_description: Wait until a host answers over its connection, with a line per poll
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - Waits until the host answers over its connection (SSH for a TPU worker), as
    C(ansible.builtin.wait_for_connection) does, which it runs in slices of O(poll) seconds.
  - "After every slice that found no answer, a line says so, such as
    C(pod-a-w0: no SSH answer yet (15 s)), under the default callback and with no
    configuration; a host that answers within the first slice prints nothing."
  - Fails when the host has not answered after O(timeout) seconds, with the last reason.
  - An action plugin; it runs on the controller.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Only connects.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  timeout:
    description: Seconds to wait in all.
    type: int
    default: 600
  sleep:
    description: Seconds between two tries within a slice.
    type: int
    default: 2
  connect_timeout:
    description: Seconds one connection try may take.
    type: int
    default: 5
  poll:
    description: Seconds of one slice, the time between two lines.
    type: float
    default: 10.0
seealso:
  - name: ansible.builtin.wait_for_connection
    description: The module that waits for a connection, which this action runs.
    link: https://docs.ansible.com/ansible/latest/collections/ansible/builtin/wait_for_connection_module.html
"""

EXAMPLES = r"""
- name: Wait until every worker answers, a line every 10 seconds while one does not
  cloudtpu.pod.ssh_wait:
    timeout: 600
    poll: 10
"""

RETURN = r"""
elapsed:
  description: Seconds waited.
  returned: always
  type: float
  sample: 23.5
"""
