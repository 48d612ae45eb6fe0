#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Request Cloud TPU capacity through a queued resource (TPU v2 API)."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_queued_resource
short_description: Request Cloud TPU nodes through a queued resource (TPU v2 API)
version_added: 0.1.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - Creates or deletes a queued resource, a request for one TPU node, or for O(node_count)
    identical nodes (a multislice request, nodes named C(<node_prefix>-0) ...), that the
    service fulfils when capacity is free. Spot, guaranteed, flex-start and on-demand tiers,
    with an optional validity window.
  - Waits until the request is C(ACTIVE) (its nodes exist and are C(READY)), through
    C(WAITING_FOR_RESOURCES) and C(PROVISIONING); the result lists the states seen. A request
    that ends C(FAILED) or C(SUSPENDED) is deleted and created again with the same spec up to
    O(requeue_tries) times; after that the task fails with the reason the API gives. One still
    waiting for capacity after O(timeout) seconds fails the task but stays queued (run the task
    again to keep waiting).
  - "While it waits, a line with the request's state is printed at every poll (every
    O(poll_interval) seconds), such as C(pod-a: WAITING_FOR_RESOURCES (600 s)), under any
    callback and with no configuration. The lines come from the collection's action plugin of
    the same name when the module runs on the controller (connection local); a module run on
    another host, an async task, a task with C(no_log) and check mode print none."
  - O(state=recreated) deletes an existing request (nodes included) and creates it again with
    the spec the API reports for it, as recovery after a preemption or suspension does.
  - An existing queued resource with the same tier, node names and accelerator type is left
    alone; a different one fails the task with the differences listed (delete it first).
  - Deleting with O(force=true) deletes its nodes too; without it the API refuses while nodes
    exist.
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
  - cloudtpu.pod.tpu_api.project
  - cloudtpu.pod.tpu_api.zone
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads and reports what would change; no call that changes anything is made.
  diff_mode:
    support: none
  platform:
    platforms: all
options:
  name:
    description: Queued resource ID.
    type: str
    required: true
    aliases: [queued_resource_id]
  state:
    description:
      - V(present) requests the capacity and waits for it; V(absent) deletes the request.
      - V(recreated) deletes the existing request with its nodes and creates it again with the
        spec the API reports (the task's node options are not used), then waits as V(present).
    type: str
    choices: [present, absent, recreated]
    default: present
  tier:
    description:
      - V(spot) is preemptible capacity; V(guaranteed) capacity that is not preempted;
        V(on_demand) neither field set (the API's default tier).
      - V(flex_start) is capacity for a bounded time (the nodes' C(schedulingConfig)
        C(provisioningModel=FLEX_START), the request's C(runDuration.maxRunDuration) from
        O(max_run_duration)); the service deletes the nodes after it and the request becomes
        C(SUSPENDED).
    type: str
    choices: [on_demand, spot, guaranteed, flex_start]
    default: on_demand
  reservation_name:
    description: Reservation to take the capacity from (C(projects/P/locations/Z/reservations/R)).
    type: str
  node_id:
    description: ID of the node, when O(node_count=1). Defaults to O(name).
    type: str
  node_count:
    description:
      - Number of identical nodes (slices). More than 1 makes a multislice request
        (C(multisliceParams)); the nodes are named C(<node_prefix>-0) to C(<node_prefix>-N-1).
    type: int
    default: 1
  node_prefix:
    description: Prefix of the node IDs of a multislice request. Defaults to O(name).
    type: str
  accelerator_type:
    description: TPU type and size of each node, for example C(v5litepod-16). Required to create.
    type: str
  runtime_version:
    description:
      - TPU VM software image of each node.
      - When created without it, the image the public guide names for the accelerator type's
        generation (C(tpu-ubuntu2204-base) up to v4, C(v2-alpha-tpuv5-lite) for v5e,
        C(v2-alpha-tpuv5) for v5p, C(v2-alpha-tpuv6e) for v6e).
    type: str
  description:
    description: Description of each node.
    type: str
  network:
    description: VPC network name or path.
    type: str
  subnetwork:
    description: Subnetwork name or path.
    type: str
  enable_external_ips:
    description: Give every worker an external IP address.
    type: bool
  labels:
    description: Labels of each node.
    type: dict
  metadata:
    description:
      - Metadata of each node's workers (C(startup-script), C(ssh-keys), ...).
      - C(startup-script) and C(shutdown-script) are secret. The results (the request's node
        spec, RV(nodes)) and the module's own arguments show hidden markers instead, as
        M(cloudtpu.pod.tpu_node) does.
    type: dict
  service_account:
    description: Service account the workers run as.
    type: dict
    suboptions:
      email:
        description: Service account email.
        type: str
      scopes:
        description: OAuth2 scopes.
        type: list
        elements: str
  tags:
    description: Network tags of each node.
    type: list
    elements: str
  max_run_duration:
    description:
      - With O(tier=flex_start) (required there), how long the nodes may run, as a duration
        such as C(14400s).
    type: str
  valid_until_duration:
    description:
      - How long the request may wait in the queue, as a duration such as C(3600s); the API
        fails it after that (C(queueingPolicy.validUntilDuration)).
    type: str
  valid_until_time:
    description: The time after which the request fails if still queued, RFC 3339 such as
      C(2030-01-31T08:00:00Z). Not with O(valid_until_duration).
    type: str
  valid_after_duration:
    description: How long from now before the request may be provisioned, such as C(600s).
    type: str
  valid_after_time:
    description: The earliest time the request may be provisioned, RFC 3339. Not with
      O(valid_after_duration).
    type: str
  requeue_tries:
    description:
      - How many times a request that ends C(FAILED) or C(SUSPENDED) (or is found so) is
        deleted and created again with the same spec before the task fails. C(0) fails at
        once. Each attempt is reported in RV(attempts).
    type: int
    default: 0
  force:
    description: With O(state=absent), delete the request's nodes too.
    type: bool
    default: false
  wait:
    description: Wait until the request is C(ACTIVE) (or gone, when deleting).
    type: bool
    default: true
  timeout:
    description: Seconds to wait in all.
    type: int
    default: 3600
  poll_interval:
    description: Seconds between two reads while waiting.
    type: float
    default: 10.0
seealso:
  - module: cloudtpu.pod.tpu_node
"""

EXAMPLES = r"""
- name: Two spot v5e-16 slices for a multislice job
  cloudtpu.pod.tpu_queued_resource:
    name: ms-run
    project: my-project
    zone: us-west4-a
    tier: spot
    node_count: 2
    node_prefix: ms-run
    accelerator_type: v5litepod-16
    runtime_version: v2-alpha-tpuv5-lite
    metadata:
      ssh-keys: "researcher:{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
    timeout: 7200
  register: qr

- name: The node names
  ansible.builtin.debug:
    msg: "{{ qr.nodes | map(attribute='name') | list }}"

- name: Give the capacity back, nodes included
  cloudtpu.pod.tpu_queued_resource:
    name: ms-run
    project: my-project
    zone: us-west4-a
    state: absent
    force: true

- name: Flex-start v5e capacity for four hours, waiting at most a day, re-queued twice at most
  cloudtpu.pod.tpu_queued_resource:
    name: flex-run
    project: my-project
    zone: us-west4-a
    tier: flex_start
    max_run_duration: 14400s
    valid_until_duration: 86400s
    requeue_tries: 2
    accelerator_type: v5litepod-8
"""

RETURN = r"""
queued_resource:
  description: The queued resource as the TPU API describes it (empty when absent).
  returned: always
  type: dict
  sample:
    name: projects/my-project/locations/us-west4-a/queuedResources/ms-run
    state: {state: ACTIVE}
state:
  description: State of the request (C(ACTIVE), C(WAITING_FOR_RESOURCES), C(FAILED), ...), or
    C(ABSENT).
  returned: always
  type: str
  sample: ACTIVE
states_seen:
  description: The request's states in the order this task saw them, over all attempts.
  returned: always
  type: list
  elements: str
  sample: [WAITING_FOR_RESOURCES, PROVISIONING, ACTIVE]
attempts:
  description:
    - One entry per request this task created (C(why) V(created), V(requeued) or
      V(recreated)), with the state it reached and the reason the API gave.
  returned: always
  type: list
  elements: dict
  sample:
    - {attempt: 1, why: created, state: FAILED, reason: "Quota exceeded"}
    - {attempt: 2, why: requeued, state: ACTIVE, reason: ""}
nodes:
  description:
    - The request's nodes once they exist, in the shape M(cloudtpu.pod.tpu_node_info) returns
      (C(name), C(zone), C(state), C(workers), C(spec), C(resource), ...).
  returned: always
  type: list
  elements: dict
  sample:
    - name: ms-run-0
      state: READY
      workers: [{worker_id: 0, internal_ip: 10.130.0.2, external_ip: null}]
"""

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    api_module,
    run_task,
    zone_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued import (
    TIERS,
    schedule_problems,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued_task import (
    QueuedResourceTask,
)


def argument_spec() -> dict[str, Any]:
    return zone_argument_spec(
        name={"type": "str", "required": True, "aliases": ["queued_resource_id"]},
        state={
            "type": "str",
            "default": "present",
            "choices": ["present", "absent", "recreated"],
        },
        tier={"type": "str", "default": "on_demand", "choices": list(TIERS)},
        reservation_name={"type": "str"},
        node_id={"type": "str"},
        node_count={"type": "int", "default": 1},
        node_prefix={"type": "str"},
        accelerator_type={"type": "str"},
        runtime_version={"type": "str"},
        description={"type": "str"},
        network={"type": "str"},
        subnetwork={"type": "str"},
        enable_external_ips={"type": "bool"},
        labels={"type": "dict"},
        metadata={"type": "dict"},
        service_account={
            "type": "dict",
            "options": {
                "email": {"type": "str"},
                "scopes": {"type": "list", "elements": "str"},
            },
        },
        tags={"type": "list", "elements": "str"},
        max_run_duration={"type": "str"},
        valid_until_duration={"type": "str"},
        valid_until_time={"type": "str"},
        valid_after_duration={"type": "str"},
        valid_after_time={"type": "str"},
        requeue_tries={"type": "int", "default": 0},
        force={"type": "bool", "default": False},
        wait={"type": "bool", "default": True},
        timeout={"type": "int", "default": 3600},
        poll_interval={"type": "float", "default": 10.0},
    )


def main() -> None:
    module = api_module(argument_spec())
    problems = schedule_problems(module.params)
    if problems:
        module.fail_json(msg=" ".join(problems), problems=problems)
    module.exit_json(**run_task(module, QueuedResourceTask))


if __name__ == "__main__":
    main()
