# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""One run of the cloudtpu.pod.tpu_queued_resource module: read the request, decide, act, and
wait until it is ACTIVE (re-queueing a FAILED or SUSPENDED one while tries are left) or gone.
Every read while waiting is a progress line (``tpu_progress.py``) when the action plugin asks
for them."""

from __future__ import annotations

import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    default_runtime_version,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress import ProgressLog
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued import (
    GIVEN_UP,
    Progress,
    differences,
    queued_resource_node_ids,
    queued_resource_state,
    recreate_body,
    request_body,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import node_summary
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_wait import Deadline


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
        self.log = ProgressLog()  # lines for the action plugin, when it asks for them
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

    def look(self) -> dict[str, Any] | None:
        """A read while waiting: the request, and a progress line with its state."""
        qr = self.find()
        self.log.line(self.name, queued_resource_state(qr)[0] if qr else "gone")
        return qr

    def wait_operation(self, operation: dict[str, Any]) -> None:
        """Wait for the operation; with progress on, the request's state is read at every poll."""

        def show(current: dict[str, Any]) -> None:
            if current.get("done"):
                return
            try:
                self.look()
            except TpuApiError as exc:  # a read for the progress line only: the wait goes on
                self.log.line(self.name, "?", f", not read: {exc.reason or exc.status}")

        self.client.wait_operation(
            operation,
            timeout=self.deadline.left(),
            poll=self.poll,
            each=show if self.log.on else None,
        )

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
                self.wait_operation(operation)
        if not self.params["wait"]:
            return
        current: dict[str, Any] | None = qr
        while current is not None:
            if self.deadline.passed():
                self.fail(
                    f"{self.where()} is still {queued_resource_state(current)[0]} after "
                    f"{self.deadline.seconds:.0f} s; the API goes on deleting it."
                )
            current = self.look()
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
            self.wait_operation(operation)
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
            qr = self.look()
        return qr

    def nodes(self, qr: dict[str, Any]) -> list[dict[str, Any]]:
        found = []
        for node_id in queued_resource_node_ids(qr):
            node = self.client.find_node(self.project, self.zone, node_id)
            if node is not None:
                found.append(node_summary(node))
        return found
