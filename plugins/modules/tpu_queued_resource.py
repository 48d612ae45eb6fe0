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
  - O(state=recreated) deletes an existing request (nodes included) and creates it again with
    the spec the API reports for it, as recovery after a preemption or suspension does.
  - An existing queued resource with the same tier, node names and accelerator type is left
    alone; a different one fails the task with the differences listed (delete it first).
  - Deleting with O(force=true) deletes its nodes too; without it the API refuses while nodes
    exist.
extends_documentation_fragment:
  - cloudtpu.pod.tpu_api
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
  project:
    description:
      - Google Cloud project ID.
      - Falls back to the environment variable E(GCP_PROJECT).
    type: str
    required: true
  zone:
    description: Zone, for example C(us-central2-b).
    type: str
    required: true
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

import time
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
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    default_runtime_version,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued import (
    GIVEN_UP,
    TIERS,
    Progress,
    differences,
    recreate_body,
    request_body,
    schedule_problems,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import (
    Deadline,
    node_summary,
    queued_resource_node_ids,
    queued_resource_state,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import HidingModule


def argument_spec() -> dict[str, Any]:
    spec = auth_argument_spec()
    spec.update(
        name={"type": "str", "required": True, "aliases": ["queued_resource_id"]},
        project={"type": "str", "required": True, "fallback": (env_fallback, ["GCP_PROJECT"])},
        zone={"type": "str", "required": True},
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
    return spec


class QueuedResourceTask:
    def __init__(self, module: AnsibleModule, client: TpuClient) -> None:
        self.module = module
        self.client = client
        self.params = module.params
        self.project = self.params["project"]
        self.zone = self.params["zone"]
        self.name = self.params["name"]
        self.poll = max(0.01, float(self.params["poll_interval"]))
        self.deadline = Deadline(self.params["timeout"])
        self.progress = Progress()
        self.result: dict[str, Any] = {
            "changed": False,
            "queued_resource": {},
            "state": "ABSENT",
            "nodes": [],
            "states_seen": self.progress.states,
            "attempts": self.progress.attempts,
        }

    def where(self) -> str:
        return f"Queued resource {self.name} in {self.project}/{self.zone}"

    def find(self) -> dict[str, Any] | None:
        try:
            qr = self.client.get_queued_resource(self.project, self.zone, self.name)
        except TpuApiError as exc:
            if exc.not_found:
                return None
            raise
        self.progress.saw(queued_resource_state(qr)[0])
        return qr

    def record(self, qr: dict[str, Any] | None) -> None:
        self.result["queued_resource"] = qr or {}
        self.result["state"] = queued_resource_state(qr)[0] if qr else "ABSENT"

    def fail(self, msg: str) -> None:
        self.module.fail_json(msg=msg, **self.result)

    def run(self) -> dict[str, Any]:
        qr = self.find()
        self.record(qr)
        if self.params["state"] == "absent":
            return self.absent(qr)
        if self.params["state"] == "recreated":
            return self.recreated(qr)
        return self.present(qr)

    def delete(self, qr: dict[str, Any], force: bool) -> None:
        """Delete the request (unless already deleting) and, with wait, until it is gone."""
        if queued_resource_state(qr)[0] != "DELETING":
            operation = self.client.delete_queued_resource(
                self.project, self.zone, self.name, force=force
            )
            if self.params["wait"]:
                self.client.wait_operation(operation, timeout=self.deadline.left(), poll=self.poll)
        if not self.params["wait"]:
            return
        current: dict[str, Any] | None = qr
        while current is not None:
            if self.deadline.passed():
                self.fail(
                    f"{self.where()} is still {queued_resource_state(current)[0]} after "
                    f"{self.deadline.seconds:.0f} s; the API goes on deleting it."
                )
            current = self.find()
            if current is not None:
                time.sleep(self.poll)

    def absent(self, qr: dict[str, Any] | None) -> dict[str, Any]:
        if qr is None:
            return self.result
        self.result["changed"] = True
        if self.module.check_mode:
            return self.result
        self.delete(qr, self.params["force"])
        self.record(None)
        return self.result

    def create(self, body: dict[str, Any], why: str) -> dict[str, Any] | None:
        self.progress.attempt(why)
        operation = self.client.create_queued_resource(self.project, self.zone, self.name, body)
        if self.params["wait"]:
            self.client.wait_operation(operation, timeout=self.deadline.left(), poll=self.poll)
        return self.find()

    def recreated(self, qr: dict[str, Any] | None) -> dict[str, Any]:
        if qr is None:
            self.fail(
                f"{self.where()} does not exist, so there is no spec to create it again from."
            )
            return self.result
        self.result["changed"] = True
        if self.module.check_mode:
            return self.result
        body = recreate_body(qr)
        wait = self.params["wait"]
        self.params["wait"] = True  # the new request needs the old one gone
        self.delete(qr, force=True)
        self.params["wait"] = wait
        return self.settle(self.create(body, "recreated"))

    def present(self, qr: dict[str, Any] | None) -> dict[str, Any]:
        if qr is None:
            if not self.params["runtime_version"] and self.params["accelerator_type"]:
                self.params["runtime_version"] = (
                    default_runtime_version(self.params["accelerator_type"]) or None
                )
            missing = [f for f in ("accelerator_type", "runtime_version") if not self.params[f]]
            if missing:
                self.fail(
                    f"{self.where()} does not exist; creating it needs {' and '.join(missing)}."
                )
            if self.params["node_count"] < 1:
                self.fail(f"node_count must be 1 or more, got {self.params['node_count']}.")
            self.result["changed"] = True
            if self.module.check_mode:
                return self.result
            qr = self.create(request_body(self.params), "created")
        else:
            found = differences(self.params, qr)
            if found:
                self.fail(
                    f"{self.where()} exists with a different request: {'; '.join(found)}. A "
                    "queued resource cannot be changed; delete it (state: absent, force: true) "
                    "and create it again."
                )
            if self.module.check_mode:
                word = queued_resource_state(qr)[0]
                self.result["changed"] = word in GIVEN_UP and self.params["requeue_tries"] > 0
                self.list_nodes(qr)
                return self.result
        return self.settle(qr)

    def settle(self, qr: dict[str, Any] | None) -> dict[str, Any]:
        """Wait until ACTIVE, re-queueing a FAILED or SUSPENDED request while tries are left."""
        requeues = 0
        while True:
            if not self.params["wait"]:
                break
            qr = self.wait_active(qr)
            if qr is None:
                break
            word, why = queued_resource_state(qr)
            self.progress.ended(word, why if word in GIVEN_UP else "")
            if word not in GIVEN_UP or requeues >= self.params["requeue_tries"]:
                break
            requeues += 1
            self.result["changed"] = True
            body = recreate_body(qr)
            self.delete(qr, force=True)
            qr = self.create(body, "requeued")
        self.record(qr)
        if self.params["wait"]:
            self.check_given_up(qr)
        self.list_nodes(qr)
        return self.result

    def list_nodes(self, qr: dict[str, Any] | None) -> None:
        """The request's nodes in the result once it is ACTIVE (read-only: check mode too)."""
        if qr is not None and queued_resource_state(qr)[0] == "ACTIVE":
            self.result["nodes"] = self.nodes(qr)

    def check_given_up(self, qr: dict[str, Any] | None) -> None:
        if qr is None:
            self.fail(f"{self.where()} disappeared while waiting for it.")
            return
        word, why = queued_resource_state(qr)
        if word in GIVEN_UP:
            because = f": {why}" if why else ""
            tries = self.params["requeue_tries"]
            after = f" after {tries} re-queue(s)" if tries else ""
            self.fail(
                f"{self.where()} is {word}{because}{after}. Delete it (state: absent, force: "
                "true) and request again, perhaps in another zone or tier, or raise "
                "requeue_tries."
            )

    def wait_active(self, qr: dict[str, Any] | None) -> dict[str, Any] | None:
        while qr is not None:
            word = queued_resource_state(qr)[0]
            if word == "ACTIVE" or word in GIVEN_UP:
                return qr
            if self.deadline.passed():
                self.record(qr)
                self.fail(
                    f"{self.where()} is still {word} after {self.deadline.seconds:.0f} s "
                    f"(states seen: {', '.join(self.progress.states)}). It stays queued; run "
                    "the task again to keep waiting, raise timeout, or delete it (state: absent)."
                )
            time.sleep(min(self.poll, max(self.deadline.left(), 0.01)))
            qr = self.find()
        return qr

    def nodes(self, qr: dict[str, Any]) -> list[dict[str, Any]]:
        found = []
        for node_id in queued_resource_node_ids(qr):
            node = self.client.find_node(self.project, self.zone, node_id)
            if node is not None:
                found.append(node_summary(node))
        return found


def main() -> None:
    module = HidingModule(argument_spec=argument_spec(), supports_check_mode=True)
    check_module_options(module)
    problems = schedule_problems(module.params)
    if problems:
        module.fail_json(msg=" ".join(problems), problems=problems)
    task = None
    try:
        client = TpuClient(module)
        task = QueuedResourceTask(module, client)
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
