#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Wait for the workers of pull-mode TPU nodes to bootstrap themselves, through the TPU API."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_pull_wait
short_description: Wait for pull-mode TPU workers to bootstrap themselves (guest attributes)
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - The workers of a node made with C(tpu_provision_bootstrap=pull) (C(playbooks/provision.yml))
    run ansible-pull of C(site.yml) by themselves at every boot, and publish how it goes as
    guest attributes of their VM through its metadata server
    (C(cloudtpu/pull-result), and C(cloudtpu/pull-log) with the end of the log when it fails).
  - This task reads them through the TPU API (C(nodes.getGuestAttributes), one call per node for
    all its workers) until every worker of O(nodes) has a result, at most O(timeout) seconds,
    and fails when a worker's ansible-pull ended with another exit code than 0 (with the end of
    its log), when the time is up, or when a node is lost (deleted, C(PREEMPTED)). No SSH.
  - "While it waits it prints a line at every poll with how many workers are done out of all
    and the seconds so far (C(pull bootstrap: 3 of 8 workers done, 5 running)), and one for each
    worker that finishes, with the default callback and no configuration."
  - The action plugin of the same name polls; each poll runs this module once, which reads the
    nodes and their guest attributes one time.
  - A result stays until the worker's startup-script replaces it at its next boot, so right
    after a reboot, before the script starts, the previous boot's result is what is read.
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
  - cloudtpu.pod.tpu_api.project
  - cloudtpu.pod.tpu_api.zone
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Only reads.
  diff_mode:
    support: none
  platform:
    platforms: all
options:
  nodes:
    description: Node IDs whose workers bootstrap themselves.
    type: list
    elements: str
    required: true
  timeout:
    description: Seconds to wait in all.
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two looks.
    type: float
    default: 10.0
seealso:
  - module: cloudtpu.pod.tpu_node
  - module: cloudtpu.pod.tpu_node_info
notes:
  - On the emulator of this collection (C(tools/tpu_emulator), Docker backend) each worker has
    a metadata server too, so the same path is taken there.
"""

EXAMPLES = r"""
- name: Wait until every worker of pod-a has bootstrapped itself
  cloudtpu.pod.tpu_pull_wait:
    project: my-project
    zone: us-central2-b
    nodes: [pod-a]
    timeout: 3600
  register: pulled

- name: Their exit codes
  ansible.builtin.debug:
    msg: "{{ pulled.workers | map(attribute='rc') | list }}"
"""

RETURN = r"""
workers:
  description: One entry per worker of the nodes, as last read.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Node ID.
      type: str
      sample: pod-a
    worker_id:
      description: The worker's index in the node.
      type: int
      sample: 0
    state:
      description: V(pending) (no result published yet), V(running) or V(done).
      type: str
      sample: done
    rc:
      description: ansible-pull's exit code when done, else null.
      type: int
      sample: 0
    boot:
      description: The boot the result comes from (the worker's PID 1 start, seconds since
        the epoch), or null.
      type: int
      sample: 1767225600
    seconds:
      description: How long the worker's pull ran, when done.
      type: int
      sample: 312
    log:
      description: The end of the worker's pull log when its exit code is not 0, else empty.
      type: str
      sample: ""
total:
  description: Workers in all.
  returned: always
  type: int
  sample: 8
done:
  description: Workers with a result (whatever its exit code).
  returned: always
  type: int
  sample: 8
failed_workers:
  description: Workers whose exit code is not 0.
  returned: always
  type: int
  sample: 0
running:
  description: Workers that started and have no result yet.
  returned: always
  type: int
  sample: 0
pending:
  description: Workers that published nothing yet.
  returned: always
  type: int
  sample: 0
problems:
  description: Nodes that cannot report (gone, or in a state without workers).
  returned: always
  type: list
  elements: str
  sample: []
"""

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuClient,
    api_module,
    failing_on_api_error,
    zone_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull import look, tally


def argument_spec() -> dict[str, Any]:
    return zone_argument_spec(
        nodes={"type": "list", "elements": "str", "required": True},
        timeout={"type": "int", "default": 3600},
        poll_interval={"type": "float", "default": 10.0},
    )


def main() -> None:
    module = api_module(argument_spec())
    params = module.params
    with failing_on_api_error(module):
        seen = look(TpuClient(module), params["project"], params["zone"], params["nodes"])
    module.exit_json(
        changed=False, workers=seen["workers"], problems=seen["problems"], **tally(seen["workers"])
    )


if __name__ == "__main__":
    main()
