#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Create, delete, start and stop a Cloud TPU VM node through the TPU v2 API."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_node
short_description: Create, delete, start and stop a Cloud TPU VM node (TPU v2 API)
version_added: 0.1.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - Makes a Cloud TPU VM node (a slice of one or more workers) exist with the wanted spec, or
    not exist, through the TPU v2 API. The google.cloud collection's C(gcp_tpu_node) speaks the
    retired v1 TPU Node API; this module speaks v2.
  - Waits for the long-running operation and for the node to be C(READY) (or gone), up to
    O(timeout) seconds.
  - "While it waits, a line with the node's state is printed at every poll (every
    O(poll_interval) seconds), such as C(pod-a: CREATING (40 s)), under any callback and with
    no configuration. The lines come from the collection's action plugin of the same name when
    the module runs on the controller (connection local, as for C(hosts: localhost)); a module
    run on another host, an async task, a task with C(no_log) and check mode print none."
  - An existing node with the same spec is left alone. Only the options a task sets are
    compared. O(description), O(labels), O(metadata) and O(tags) are changed in place. Any
    other difference (accelerator type, runtime version, network, scheduling, service account,
    external IPs) cannot be changed by the API, so the task fails with a list of the fields
    and their current and wanted values, unless O(recreate=true), which deletes the node and
    creates it again (everything on its disks is lost).
  - A create that gets no answer, or a 500, is not sent again blindly; the node is looked up
    first, and an existing node with the spec asked for is taken (RV(adopted)), as after a 409
    ALREADY_EXISTS.
  - Returns the node as the API describes it, and its workers with their addresses.
  - The values of the metadata keys C(startup-script) and C(shutdown-script) are secret (the pull
    bootstrap of C(playbooks/provision.yml) holds an access token and C(tpu_provision_pull_vars)
    there). Results, diffs, messages and the module's own arguments show a hidden marker instead,
    which gives the key, the length and whether it is the pull bootstrap, never a part of the
    value (C(<hidden startup-script, 7120 characters, the cloudtpu.pod pull bootstrap>)).
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
  - cloudtpu.pod.tpu_api.project
  - cloudtpu.pod.tpu_api.zone
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads the node and reports what would change; no call that changes anything is made.
  diff_mode:
    support: full
    details: The spec before and after, with the option names of this module.
  platform:
    platforms: all
options:
  name:
    description: Node ID, 1-63 lowercase letters, digits and hyphens, starting with a letter.
    type: str
    required: true
    aliases: [node_id]
  state:
    description:
      - V(present) makes the node exist with the spec (a stopped node stays stopped).
      - V(absent) deletes it.
      - V(started) makes it exist and run (starts a stopped single-host node).
      - V(stopped) stops a running single-host node; the node must exist.
      - A C(PREEMPTED) or C(TERMINATED) node cannot be started; delete and create it again
        (O(recreate) or the collection's C(playbooks/recover.yml)).
    type: str
    choices: [present, absent, started, stopped]
    default: present
  accelerator_type:
    description:
      - TPU type and size, for example C(v4-16), C(v5litepod-8), C(v6e-16).
      - Required to create a node.
    type: str
  runtime_version:
    description:
      - TPU VM software image, for example C(tpu-ubuntu2204-base) or C(v2-alpha-tpuv5-lite).
      - When a node is created without it, the image the public guide names for the accelerator
        type's generation (C(tpu-ubuntu2204-base) up to v4, C(v2-alpha-tpuv5-lite) for v5e,
        C(v2-alpha-tpuv5) for v5p, C(v2-alpha-tpuv6e) for v6e). An existing node's image is
        only compared when this is set.
    type: str
  description:
    description: Free text description of the node. Changed in place.
    type: str
  network:
    description: VPC network name or path. The API uses C(default) when not set at creation.
    type: str
  subnetwork:
    description: Subnetwork name or path.
    type: str
  enable_external_ips:
    description:
      - Give every worker an external IP address (C(true)), or internal addresses only.
      - Not set at creation means the API default (no external IPs).
    type: bool
  spot:
    description: Create a Spot node (preemptible at any time, cheaper). At most one of O(spot),
      O(preemptible) and O(reserved) may be true.
    type: bool
  preemptible:
    description: Create a preemptible node (the older form of Spot).
    type: bool
  reserved:
    description: Create the node from the project's reserved capacity.
    type: bool
  labels:
    description: Labels (keys and values are strings). Changed in place; the node gets exactly
      these labels.
    type: dict
  metadata:
    description:
      - Metadata of the workers, for example C(startup-script) and C(ssh-keys)
        (C(user:ssh-ed25519 AAAA... comment) lines, which the TPU VM guest agent turns into login
        users with passwordless sudo). Changed in place.
      - With O(metadata_mode=merge) (the default) an existing node keeps the keys the task does
        not name, and C(ssh-keys) is merged per user (the users named here get exactly these
        keys, other users' keys stay), so a re-run does not lock other people out. With
        V(replace) the node gets exactly these keys.
      - A value that is a hidden marker (as this module, M(cloudtpu.pod.tpu_node_info) and
        M(cloudtpu.pod.tpu_journal) return C(startup-script) and C(shutdown-script)) stands for
        the value it hides, of the same key and length, taken from the node, else (with
        O(journal)) from the recovery journal's entry of the node; the task fails when neither
        holds it. So a spec read with M(cloudtpu.pod.tpu_node_info) can be given back as it is.
    type: dict
  metadata_mode:
    description: How O(metadata) is applied to an existing node.
    type: str
    choices: [merge, replace]
    default: merge
  service_account:
    description: Service account the workers run as.
    type: dict
    suboptions:
      email:
        description: Service account email; the API picks the project's default when not set.
        type: str
      scopes:
        description: OAuth2 scopes of the workers' credentials.
        type: list
        elements: str
  tags:
    description: Network tags (firewall rules select workers by them). Changed in place.
    type: list
    elements: str
  recreate:
    description:
      - When the node exists with a difference the API cannot change in place, delete it and
        create it again instead of failing. Everything on the workers' disks is lost.
    type: bool
    default: false
  wait:
    description:
      - Wait for operations to finish and for the node to be C(READY), C(STOPPED) or gone.
      - With V(false) the module returns once the API has accepted the request.
    type: bool
    default: true
  timeout:
    description: Seconds to wait in all, for every operation of this task together.
    type: int
    default: 1800
  poll_interval:
    description: Seconds between two reads of an operation or node while waiting.
    type: float
    default: 10.0
  journal:
    description:
      - Keep the node's spec in the controller's recovery journal (M(cloudtpu.pod.tpu_journal)),
        as C(playbooks/recover.yml) does. With O(state=absent) the spec the API reports, secret
        values included, is written before the node is deleted (step C(deleting)) and again once
        it is gone (step C(creating)); no delete is sent when it cannot be written. With
        O(state=present) hidden markers in O(metadata) are also looked up in the journal, and a
        node created while the journal holds it is noted there (step C(creating)).
      - The journal file is mode 0600 in a folder of mode 0700 (see O(state_dir)).
    type: bool
    default: false
  state_dir:
    description:
      - The state folder of the journal (O(journal)), as for M(cloudtpu.pod.tpu_journal).
      - Falls back to the environment variable E(CLOUDTPU_STATE_DIR), else
        C(~/.local/state/cloudtpu.pod).
    type: str
seealso:
  - module: cloudtpu.pod.tpu_node_info
  - module: cloudtpu.pod.tpu_queued_resource
  - module: cloudtpu.pod.tpu_journal
"""

EXAMPLES = r"""
- name: A v4-16 slice (two workers) with a login user
  cloudtpu.pod.tpu_node:
    name: pod-a
    project: my-project
    zone: us-central2-b
    accelerator_type: v4-16
    runtime_version: tpu-ubuntu2204-base
    enable_external_ips: true
    spot: true
    labels:
      team: vision
    metadata:
      ssh-keys: "researcher:{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
  register: pod

- name: Print the workers' addresses
  ansible.builtin.debug:
    msg: "{{ pod.workers | map(attribute='external_ip') | list }}"

- name: Move to a newer runtime, accepting that the node is created again
  cloudtpu.pod.tpu_node:
    name: pod-a
    project: my-project
    zone: us-central2-b
    accelerator_type: v4-16
    runtime_version: tpu-ubuntu2204-base
    recreate: true

- name: Stop a single-host node for the night
  cloudtpu.pod.tpu_node:
    name: dev-v5e
    project: my-project
    zone: us-west4-a
    state: stopped

- name: Delete it, without waiting
  cloudtpu.pod.tpu_node:
    name: pod-a
    project: my-project
    zone: us-central2-b
    state: absent
    wait: false
"""

RETURN = r"""
node:
  description:
    - The node as the TPU API describes it (empty when it does not exist, or in check mode
      before it was created), C(startup-script) and C(shutdown-script) in its C(metadata) as
      hidden markers.
  returned: always
  type: dict
  sample:
    name: projects/my-project/locations/us-central2-b/nodes/pod-a
    acceleratorType: v4-16
    runtimeVersion: tpu-ubuntu2204-base
    state: READY
    health: HEALTHY
    networkEndpoints:
      - ipAddress: 10.130.0.2
        port: 8470
        accessConfig:
          externalIp: 203.0.113.10
workers:
  description: One entry per worker, worker 0 (the coordinator) first.
  returned: always
  type: list
  elements: dict
  contains:
    worker_id:
      description: Index of the worker in the node.
      type: int
      sample: 0
    internal_ip:
      description: Internal address.
      type: str
      sample: 10.130.0.2
    external_ip:
      description: External address, or null when the node has none.
      type: str
      sample: 203.0.113.10
updated_fields:
  description: Fields changed in place on an existing node.
  returned: always
  type: list
  elements: str
  sample: [labels]
recreated:
  description: Whether the node was deleted and created again (O(recreate)).
  returned: always
  type: bool
  sample: false
adopted:
  description:
    - Whether the create found the node there after all and took it, because its spec is the
      one asked for (differences the API can change in place are changed). That happens when
      the API answers 409 ALREADY_EXISTS (another run made it in the meantime), or when a
      create got no answer or a 500 and the look that follows finds the node it made; a create
      is sent again only when that look finds nothing.
  returned: always
  type: bool
  sample: false
differences:
  description: Every difference between the task and the existing node, changed or not.
  returned: always
  type: list
  elements: dict
  sample:
    - field: runtime_version
      current: tpu-ubuntu2204-base
      wanted: v2-alpha-tpuv5
      mutable: false
"""

from typing import Any

from ansible.module_utils.basic import env_fallback
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    api_module,
    run_task,
    zone_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import STATE_DIR_ENV
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_node_task import NodeTask


def argument_spec() -> dict[str, Any]:
    return zone_argument_spec(
        name={"type": "str", "required": True, "aliases": ["node_id"]},
        state={
            "type": "str",
            "default": "present",
            "choices": ["present", "absent", "started", "stopped"],
        },
        accelerator_type={"type": "str"},
        runtime_version={"type": "str"},
        description={"type": "str"},
        network={"type": "str"},
        subnetwork={"type": "str"},
        enable_external_ips={"type": "bool"},
        spot={"type": "bool"},
        preemptible={"type": "bool"},
        reserved={"type": "bool"},
        labels={"type": "dict"},
        metadata={"type": "dict"},
        metadata_mode={"type": "str", "choices": ["merge", "replace"], "default": "merge"},
        service_account={
            "type": "dict",
            "options": {
                "email": {"type": "str"},
                "scopes": {"type": "list", "elements": "str"},
            },
        },
        tags={"type": "list", "elements": "str"},
        recreate={"type": "bool", "default": False},
        wait={"type": "bool", "default": True},
        timeout={"type": "int", "default": 1800},
        poll_interval={"type": "float", "default": 10.0},
        journal={"type": "bool", "default": False},
        state_dir={"type": "str", "fallback": (env_fallback, [STATE_DIR_ENV])},
    )


def main() -> None:
    module = api_module(argument_spec())
    module.exit_json(**run_task(module, NodeTask))


if __name__ == "__main__":
    main()
