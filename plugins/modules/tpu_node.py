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
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
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
  project:
    description:
      - Google Cloud project ID.
      - Falls back to the environment variable E(GCP_PROJECT).
    type: str
    required: true
  zone:
    description: Zone of the node, for example C(us-central2-b).
    type: str
    required: true
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
seealso:
  - module: cloudtpu.pod.tpu_node_info
  - module: cloudtpu.pod.tpu_queued_resource
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
      before it was created).
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

from ansible.module_utils.basic import AnsibleModule, env_fallback
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuApiError,
    TpuClient,
    auth_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    check_module_options,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_create import create_or_find
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    default_runtime_version,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import (
    LOST_STATES,
    MUTABLE_FIELDS,
    SPEC_FIELDS,
    TRANSITIONAL_STATES,
    Deadline,
    describe_differences,
    merge_metadata,
    node_body,
    node_spec,
    node_workers,
    spec_differences,
    wait_node,
)


def argument_spec() -> dict[str, Any]:
    spec = auth_argument_spec()
    spec.update(
        name={"type": "str", "required": True, "aliases": ["node_id"]},
        project={"type": "str", "required": True, "fallback": (env_fallback, ["GCP_PROJECT"])},
        zone={"type": "str", "required": True},
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
    )
    return spec


class NodeTask:
    """One run of the module: read the node, decide, act, wait."""

    def __init__(self, module: AnsibleModule, client: TpuClient) -> None:
        self.module = module
        self.client = client
        params = module.params
        self.project = params["project"]
        self.zone = params["zone"]
        self.name = params["name"]
        self.state = params["state"]
        self.wait = params["wait"]
        self.poll = max(0.01, float(params["poll_interval"]))
        self.deadline = Deadline(params["timeout"])
        self.check = module.check_mode
        self.wanted = {field: params[field] for field in SPEC_FIELDS}
        self.result: dict[str, Any] = {
            "changed": False,
            "node": {},
            "workers": [],
            "updated_fields": [],
            "recreated": False,
            "adopted": False,
            "differences": [],
        }
        self.before: dict[str, Any] = {}
        self.after: dict[str, Any] = {}

    # -- API steps ------------------------------------------------------------------------------

    def where(self) -> str:
        return f"TPU node {self.name} in {self.project}/{self.zone}"

    def finish(self, operation: dict[str, Any]) -> None:
        if self.wait:
            self.client.wait_operation(operation, timeout=self.deadline.left(), poll=self.poll)

    def settle(self, node: dict[str, Any] | None) -> dict[str, Any] | None:
        """Wait while the node is on its way somewhere (creating, deleting, stopping, ...)."""
        if node is None or node.get("state") not in TRANSITIONAL_STATES:
            return node
        if not self.wait or self.check:
            return node
        return wait_node(
            self.client,
            self.project,
            self.zone,
            self.name,
            lambda n: n is None or n.get("state") not in TRANSITIONAL_STATES,
            self.deadline,
            self.poll,
            "settled (not " + node["state"] + ")",
        )

    def wait_for(self, states: tuple[str, ...]) -> dict[str, Any] | None:
        if not self.wait:
            return self.client.find_node(self.project, self.zone, self.name)
        return wait_node(
            self.client,
            self.project,
            self.zone,
            self.name,
            lambda n: n is not None and n.get("state") in states,
            self.deadline,
            self.poll,
            " or ".join(states),
        )

    def delete(self, node: dict[str, Any], wait: bool | None = None) -> None:
        """Delete the node; ``wait`` (default: the wait option) waits until it is gone."""
        wait = self.wait if wait is None else wait
        if node.get("state") != "DELETING":
            operation = self.client.delete_node(self.project, self.zone, self.name)
            if wait:
                self.client.wait_operation(operation, timeout=self.deadline.left(), poll=self.poll)
        if wait:
            wait_node(
                self.client,
                self.project,
                self.zone,
                self.name,
                lambda n: n is None,
                self.deadline,
                self.poll,
                "deleted",
            )

    def create(self) -> dict[str, Any] | None:
        if not self.wanted.get("runtime_version") and self.wanted.get("accelerator_type"):
            self.wanted["runtime_version"] = (
                default_runtime_version(self.wanted["accelerator_type"]) or None
            )
        missing = [f for f in ("accelerator_type", "runtime_version") if not self.wanted.get(f)]
        if missing:
            self.module.fail_json(
                msg=f"{self.where()} does not exist; creating it needs {' and '.join(missing)} "
                "(for example accelerator_type: v4-8 and runtime_version: tpu-ubuntu2204-base).",
                **self.result,
            )
        operation, existing, ours = create_or_find(
            self.client, self.project, self.zone, self.name, node_body(self.wanted)
        )
        if existing is None:
            self.finish(operation or {})
            return self.wait_for(("READY",))
        return self.adopt(existing, ours)

    def adopt(self, existing: dict[str, Any], ours: bool) -> dict[str, Any] | None:
        """The node exists after all (a 409, or an earlier attempt of this create went
        through): take it when its spec is the one asked for, as for a node found at the
        start; the differences the API cannot change in place are refused as there."""
        self.result["adopted"] = True
        self.result["changed"] = ours
        node = self.settle(existing)
        if node is None:
            self.module.fail_json(
                msg=f"{self.where()} was there when it was created, and is gone now; run the "
                "task again.",
                **self.result,
            )
        node = self.present(node)
        if node is not None and node.get("state") != "READY" and self.state != "stopped":
            return self.wait_for(("READY",))
        return node

    # -- decisions ------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        scheduling = [f for f in ("spot", "preemptible", "reserved") if self.wanted.get(f)]
        if len(scheduling) > 1:
            self.module.fail_json(
                msg=f"spot, preemptible and reserved exclude each other; got {scheduling} all "
                "true. Set at most one of them."
            )
        node = self.settle(self.client.find_node(self.project, self.zone, self.name))
        self.before = node_spec(node) if node else {}
        if self.state == "absent":
            node = self.absent(node)
        else:
            node = self.present(node)
            if node is not None and self.state == "started":
                node = self.started(node)
            elif node is not None and self.state == "stopped":
                node = self.stopped(node)
        if node:
            self.result["node"] = node
            self.result["workers"] = node_workers(node)
        if self.module._diff:
            self.result["diff"] = {"before": self.before, "after": self.after}
        return self.result

    def absent(self, node: dict[str, Any] | None) -> dict[str, Any] | None:
        self.after = {}
        if node is None:
            return None
        self.result["changed"] = True
        if not self.check:
            self.delete(node)
        return None

    def present(self, node: dict[str, Any] | None) -> dict[str, Any] | None:
        wanted_now = {k: v for k, v in self.wanted.items() if v is not None}
        if node is None:
            if self.state == "stopped":
                self.module.fail_json(
                    msg=f"{self.where()} does not exist, so it cannot be stopped. Create it with "
                    "state: present first.",
                    **self.result,
                )
            self.after = wanted_now
            self.result["changed"] = True
            if self.check:
                return None
            return self.create()

        if (
            self.wanted.get("metadata") is not None
            and self.module.params["metadata_mode"] == "merge"
        ):
            self.wanted["metadata"] = merge_metadata(node.get("metadata"), self.wanted["metadata"])
        differences = spec_differences(self.wanted, node)
        self.result["differences"] = differences
        self.after = dict(self.before)
        for d in differences:
            if d["field"].startswith("service_account."):
                self.after["service_account"] = dict(self.after["service_account"])
                self.after["service_account"][d["field"].split(".", 1)[1]] = d["wanted"]
            else:
                self.after[d["field"]] = d["wanted"]
        fixed = [d for d in differences if not d["mutable"]]
        if fixed and not self.module.params["recreate"]:
            mutable = [d["field"] for d in differences if d["mutable"]]
            also = f" ({', '.join(mutable)} could be changed in place.)" if mutable else ""
            self.module.fail_json(
                msg=f"{self.where()} exists with a spec the TPU API cannot change in place: "
                f"{describe_differences(fixed)}. Set recreate: true to delete the node and create "
                "it again (everything on its disks is lost), or make the task match the node."
                + also,
                **self.result,
            )
        if fixed:
            self.result["changed"] = True
            self.result["recreated"] = True
            if self.check:
                return node
            # Options the task leaves out keep the node's current values on the new node.
            keep = node_spec(node)
            for field, value in self.wanted.items():
                if value is not None:
                    keep[field] = value
            self.wanted = keep
            self.delete(node, wait=True)  # the name is free only once the old node is gone
            return self.create()
        mutable = [d["field"] for d in differences if d["mutable"]]
        if mutable:
            self.result["changed"] = True
            self.result["updated_fields"] = mutable
            if self.check:
                return node
            # Wanted values are never None here; an emptied field is sent empty and cleared.
            body = node_body({field: self.wanted[field] for field in mutable})
            self.finish(
                self.client.update_node(
                    self.project, self.zone, self.name, body, [MUTABLE_FIELDS[f] for f in mutable]
                )
            )
            return self.client.find_node(self.project, self.zone, self.name)
        if node.get("state") in LOST_STATES and self.state == "present":
            self.module.warn(
                f"{self.where()} is {node['state']}: its workers are gone. Delete and create it "
                "again (recreate, or playbooks/recover.yml)."
            )
        return node

    def started(self, node: dict[str, Any]) -> dict[str, Any] | None:
        state = node.get("state")
        if state == "READY":
            return node
        if state in LOST_STATES:
            self.module.fail_json(
                msg=f"{self.where()} is {state} and cannot be started; delete and create it again "
                "(recreate, or playbooks/recover.yml).",
                **self.result,
            )
        if state != "STOPPED":
            self.module.fail_json(
                msg=f"{self.where()} is {state}; only a STOPPED node can be started.",
                **self.result,
            )
        self.result["changed"] = True
        self.after = dict(self.after or self.before, state="READY")
        if self.check:
            return node
        self.finish(self.client.start_node(self.project, self.zone, self.name))
        return self.wait_for(("READY",))

    def stopped(self, node: dict[str, Any]) -> dict[str, Any] | None:
        state = node.get("state")
        if state == "STOPPED":
            return node
        if state != "READY":
            self.module.fail_json(
                msg=f"{self.where()} is {state}; only a READY node can be stopped.",
                **self.result,
            )
        self.result["changed"] = True
        if self.check:
            return node
        self.finish(self.client.stop_node(self.project, self.zone, self.name))
        return self.wait_for(("STOPPED",))


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    check_module_options(module)
    task = None
    try:
        client = TpuClient(module)
        task = NodeTask(module, client)
        result = task.run()
    except TpuApiError as exc:
        partial = task.result if task is not None else {}
        module.fail_json(
            msg=str(exc),
            reason=exc.reason,
            status=exc.status,
            api_message=exc.api_message,
            **partial,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
