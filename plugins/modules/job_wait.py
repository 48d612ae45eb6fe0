#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Documentation of the action plugin cloudtpu.pod.job_wait (plugins/action/job_wait.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: job_wait
short_description: Wait for an async job on a host, with a line per poll while it runs
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - Waits until the async job O(jid) (a task started with C(async) and C(poll=0)) has finished
    on the host, reading its status with C(ansible.builtin.async_status) as the task's user
    (C(become) included). Reads come every second at first, then less often, up to every
    O(poll) seconds, so a short job is seen done at once and a long one costs few reads.
  - "While the job runs, a line every O(poll) seconds says so, such as
    C(pod-a-w0: framework check running (15 s)), under the default callback and with no
    configuration; a job that ends within O(poll) seconds prints nothing."
  - The job's own result is not read here; collect it with C(ansible.builtin.async_status)
    afterwards. This task fails only when the job is still running after O(timeout) seconds, or
    cannot be read.
  - An action plugin; it runs on the controller and polls the host.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Only reads the job's status.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  jid:
    description: The job ID (C(ansible_job_id) of the registered async task).
    type: str
    required: true
  label:
    description: What the job is, for the progress lines (C(framework check)).
    type: str
    default: job
  timeout:
    description: Seconds to wait in all before the task fails.
    type: int
    default: 300
  poll:
    description: Seconds between two progress lines, and the longest time between two reads
      of the job's status.
    type: float
    default: 5.0
seealso:
  - name: ansible.builtin.async_status
    description: The module that reads an async job's status, which this action calls.
    link: https://docs.ansible.com/ansible/latest/collections/ansible/builtin/async_status_module.html
"""

EXAMPLES = r"""
- name: Start a long check without waiting
  ansible.builtin.command: /usr/local/bin/long-check
  async: 600
  poll: 0
  register: check_job

- name: Wait for it, a line every 10 seconds while it runs
  cloudtpu.pod.job_wait:
    jid: "{{ check_job.ansible_job_id }}"
    label: long check
    timeout: 600
    poll: 10

- name: Collect its result
  ansible.builtin.async_status:
    jid: "{{ check_job.ansible_job_id }}"
  register: check_result
"""

RETURN = r"""
finished:
  description: Whether the job finished within O(timeout).
  returned: always
  type: bool
  sample: true
seconds:
  description: Seconds waited.
  returned: always
  type: float
  sample: 14.2
"""
