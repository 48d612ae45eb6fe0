#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""List or get Cloud TPU VM nodes through the TPU v2 API."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_node_info
short_description: List or get Cloud TPU VM nodes (TPU v2 API)
version_added: 0.1.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - Lists the TPU nodes of a project, in some zones or in all of them, filtered the way the
    C(cloudtpu.pod.tpu_vm) inventory plugin filters (O(states), O(labels),
    O(accelerator_types), O(names)), or gets one node by O(name).
  - Every node comes back with its facts (state, health, accelerator type, workers and their
    addresses), its spec in the option names of M(cloudtpu.pod.tpu_node) (so that a playbook
    can create it again), and the API's JSON.
  - The values of the metadata keys C(startup-script) and C(shutdown-script) are secret (the pull
    bootstrap of C(playbooks/provision.yml) holds an access token and C(tpu_provision_pull_vars)
    there). The spec and the API's JSON carry a hidden marker instead, such as
    C(<hidden startup-script, 7120 characters, the cloudtpu.pod pull bootstrap>), which
    M(cloudtpu.pod.tpu_node) takes back as the value it stands for.
  - Zones the API reports as unreachable are returned as warnings; their nodes are missing.
  - With O(wait_healthy) it waits for one node to be back from a maintenance event first, and
    the action plugin shows the node's state and health at every poll, as
    M(cloudtpu.pod.tpu_node) shows its state.
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
  - cloudtpu.pod.tpu_api.project
  - cloudtpu.pod.tpu_api.node_filters
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
  zones:
    description:
      - Zones to read. Empty means every zone (one call per page through the API's C(-)
        wildcard, zone by zone when the API refuses it).
    type: list
    elements: str
    default: []
    aliases: [zone]
  name:
    description:
      - Get this one node. With exactly one zone it is read directly; otherwise the zones are
        listed and searched. A node that does not exist gives an empty RV(nodes) list,
        not an error.
      - The other filters still apply to it.
    type: str
  states:
    description:
      - Keep only nodes in these states (C(READY), C(CREATING), C(STOPPED), C(PREEMPTED),
        C(TERMINATED), C(REPAIRING), ...). Empty keeps every state.
      - Unlike the inventory plugin, whose default is C([READY]), the default here keeps all.
    type: list
    elements: str
    default: []
  page_size:
    description: Nodes asked for per list call; the API may answer with fewer.
    type: int
    default: 500
  wait_healthy:
    version_added: 0.2.0
    description:
      - Read the node O(name) in the one zone of O(zones) until it is C(READY) and its health is
        no longer C(UNHEALTHY_MAINTENANCE), a maintenance event over; fail after O(timeout)
        seconds. Then return it as without this option.
      - On the controller, every read is shown as a line with the node's name, state, health and
        the seconds since the wait began. In check mode it does not wait.
    type: bool
    default: false
  timeout:
    version_added: 0.2.0
    description: With O(wait_healthy), seconds to wait in all.
    type: int
    default: 1800
  poll_interval:
    version_added: 0.2.0
    description: With O(wait_healthy), seconds between two reads of the node.
    type: float
    default: 10.0
seealso:
  - module: cloudtpu.pod.tpu_node
  - plugin: cloudtpu.pod.tpu_vm
    plugin_type: inventory
"""

EXAMPLES = r"""
- name: Every node of the project, in every zone
  cloudtpu.pod.tpu_node_info:
    project: my-project
  register: all_nodes

- name: Preempted spot v5e slices of team vision
  cloudtpu.pod.tpu_node_info:
    project: my-project
    zones: [us-west4-a, us-east5-a]
    states: [PREEMPTED, TERMINATED]
    accelerator_types: ["v5litepod-*"]
    labels:
      team: vision
  register: lost

- name: One node
  cloudtpu.pod.tpu_node_info:
    project: my-project
    zone: us-central2-b
    name: pod-a
  register: pod

- name: Wait until a node under maintenance is healthy again, its state shown at every poll
  cloudtpu.pod.tpu_node_info:
    project: my-project
    zone: us-central2-b
    name: pod-a
    wait_healthy: true
    timeout: 3600

- name: Its workers' internal addresses
  ansible.builtin.debug:
    msg: "{{ pod.nodes[0].workers | map(attribute='internal_ip') | list }}"
  when: pod.nodes | length > 0
"""

RETURN = r"""
nodes:
  description: The nodes that pass the filters, sorted by zone and name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node ID.
      type: str
      sample: pod-a
    project:
      description: Project ID.
      type: str
      sample: my-project
    zone:
      description: Zone.
      type: str
      sample: us-central2-b
    state:
      description: Node state (C(READY), C(PREEMPTED), ...).
      type: str
      sample: READY
    health:
      description: Node health (C(HEALTHY), C(UNHEALTHY_MAINTENANCE), ...).
      type: str
      sample: HEALTHY
    accelerator_type:
      description: Accelerator type.
      type: str
      sample: v4-16
    generation:
      description: TPU generation (C(v4), C(v5e), C(v5p), C(v6e), ... or C(unknown)).
      type: str
      sample: v4
    runtime_version:
      description: TPU VM software image.
      type: str
      sample: tpu-ubuntu2204-base
    worker_count:
      description: Number of workers with an address.
      type: int
      sample: 2
    workers:
      description: One entry per worker (C(worker_id), C(internal_ip), C(external_ip)).
      type: list
      elements: dict
      sample:
        - worker_id: 0
          internal_ip: 10.130.0.2
          external_ip: 203.0.113.10
    spot:
      description: Whether the node is Spot or preemptible.
      type: bool
      sample: true
    labels:
      description: Labels.
      type: dict
      sample: {team: vision}
    queued_resource:
      description: ID of the queued resource that created the node, or null.
      type: str
      sample: null
    create_time:
      description: Creation time (RFC 3339).
      type: str
      sample: "2025-01-01T00:00:00.000000Z"
    spec:
      description:
        - The node's spec in the option names of M(cloudtpu.pod.tpu_node), C(startup-script)
          and C(shutdown-script) in its C(metadata) as hidden markers.
      type: dict
      sample:
        accelerator_type: v4-16
        runtime_version: tpu-ubuntu2204-base
        spot: true
    resource:
      description: The node as the TPU API describes it.
      type: dict
      sample: {name: projects/my-project/locations/us-central2-b/nodes/pod-a, state: READY}
"""

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuClient,
    api_module,
    failing_on_api_error,
    project_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress import ProgressLog
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import (
    node_matches,
    node_summary,
    parse_node_name,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_wait import (
    MAINTENANCE,
    Deadline,
    back_from_maintenance,
    wait_node,
)


def argument_spec() -> dict[str, Any]:
    return project_argument_spec(
        zones={"type": "list", "elements": "str", "default": [], "aliases": ["zone"]},
        name={"type": "str"},
        states={"type": "list", "elements": "str", "default": []},
        labels={"type": "dict", "default": {}},
        accelerator_types={"type": "list", "elements": "str", "default": []},
        names={"type": "list", "elements": "str", "default": []},
        page_size={"type": "int", "default": 500},
        wait_healthy={"type": "bool", "default": False},
        timeout={"type": "int", "default": 1800},
        poll_interval={"type": "float", "default": 10.0},
    )


def wait_problem(params: dict[str, Any]) -> str:
    """'' when wait_healthy is off or names one node in one zone, else why not."""
    zones = [z for z in params["zones"] if z and z != "-"]
    if params["wait_healthy"] and (not params["name"] or len(zones) != 1):
        return (
            f"wait_healthy waits for one node in one zone; got name={params['name']!r} and "
            f"zones={params['zones']!r}: give name and exactly one zone"
        )
    return ""


def wait_healthy(client: TpuClient, params: dict[str, Any]) -> None:
    """Read the node until it is back from maintenance, a progress line at every read."""
    zone = next(z for z in params["zones"] if z and z != "-")
    wait_node(
        client,
        params["project"],
        zone,
        params["name"],
        back_from_maintenance,
        Deadline(params["timeout"]),
        params["poll_interval"],
        f"READY without {MAINTENANCE}",
        progress=ProgressLog(),
        health=True,
    )


def read_nodes(client: TpuClient, params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Raw nodes from the API (one GET for a named node in one zone) and warnings."""
    project = params["project"]
    zones = [z for z in params["zones"] if z and z != "-"]
    name = params["name"]
    if name and len(zones) == 1:
        node = client.find_node(project, zones[0], name)
        return ([node] if node else []), []
    nodes, warnings = client.collect_nodes(project, zones or None, params["page_size"])
    if name:
        nodes = [n for n in nodes if parse_node_name(n.get("name"))[2] == name]
    return nodes, warnings


def main() -> None:
    module = api_module(argument_spec())
    params = module.params
    if wait_problem(params):
        module.fail_json(msg=wait_problem(params))
    with failing_on_api_error(module):
        client = TpuClient(module)
        if params["wait_healthy"] and not module.check_mode:
            wait_healthy(client, params)
        nodes, warnings = read_nodes(client, params)
    for warning in warnings:
        module.warn(warning)
    kept = [
        node_summary(node)
        for node in nodes
        if node_matches(
            node,
            states=params["states"],
            labels=params["labels"],
            accelerator_types=params["accelerator_types"],
            names=params["names"],
        )
    ]
    kept.sort(key=lambda n: (n["zone"], n["name"]))
    module.exit_json(changed=False, nodes=kept)


if __name__ == "__main__":
    main()
