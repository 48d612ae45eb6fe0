# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""One run of the cloudtpu.pod.tpu_node module: read the node, decide, act, wait.

With ``journal`` (recover.yml), the node's spec is kept in the controller's recovery journal
(``tpu_journal.py``) before the node is deleted, secret values included, and a hidden marker
(``tpu_secrets.py``) in the wanted metadata is resolved from the node itself or from that
journal: the secrets of a node never pass through a playbook's variables.

While it waits, every state read is a progress line (``tpu_progress.py``), which the action
plugin shows as it comes; during an operation the node is read at every poll for it, only when
the action asks for the lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_journal
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_create import create_or_find
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    default_runtime_version,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress import ProgressLog
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import (
    LOST_STATES,
    MUTABLE_FIELDS,
    SPEC_FIELDS,
    TRANSITIONAL_STATES,
    describe_differences,
    merge_metadata,
    node_body,
    node_spec,
    node_workers,
    spec_differences,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import is_marker, reveal
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_wait import Deadline, wait_node


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
        self.progress = ProgressLog()  # lines for the action plugin, when it asks for them
        self.journal = bool(params.get("journal"))
        self.state_dir = params.get("state_dir") or None
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

    def where(self) -> str:
        return f"TPU node {self.name} in {self.project}/{self.zone}"

    # -- the recovery journal and hidden values -------------------------------------------------

    def journal_entry(self) -> dict[str, Any] | None:
        try:
            entries = tpu_journal.read(self.project, self.zone, self.state_dir)
        except tpu_journal.JournalError as exc:
            self.module.fail_json(msg=str(exc), **self.result)
        return entries.get(self.name)

    def keep(self, spec: dict[str, Any], step: str) -> None:
        """Write the node's spec, secret values included, to the journal at ``step``."""
        node = {"name": self.name, "spec": spec}
        try:
            tpu_journal.record(self.project, self.zone, [node], step, self.state_dir)
        except tpu_journal.JournalError as exc:
            self.module.fail_json(msg=str(exc), **self.result)

    def reveal(self, node: dict[str, Any] | None) -> None:
        """Replace the hidden markers of the wanted metadata with the values they stand for:
        the node's own, else (with journal) the journal's for this node."""
        metadata = self.wanted.get("metadata")
        if not metadata or not any(is_marker(v) for v in metadata.values()):
            return
        sources = [("the node", node.get("metadata"))] if node else []
        entry = self.journal_entry() if self.journal else None
        if entry is not None:
            sources.append(("the recovery journal", entry["spec"].get("metadata")))
        revealed, problems = reveal(metadata, sources)
        if problems:
            also = "" if self.journal else " (journal: true looks in the recovery journal too)"
            self.module.fail_json(msg=f"{self.where()}: {' '.join(problems)}{also}", **self.result)
        self.wanted["metadata"] = revealed

    # -- API steps ------------------------------------------------------------------------------

    def finish(self, operation: dict[str, Any]) -> None:
        if self.wait:
            self.wait_operation(operation)

    def wait_operation(self, operation: dict[str, Any]) -> None:
        """Wait for the operation; with progress on, the node's state is read at every poll."""
        each = self.show_node if self.progress.on else None
        self.client.wait_operation(
            operation, timeout=self.deadline.left(), poll=self.poll, each=each
        )

    def show_node(self, operation: dict[str, Any]) -> None:
        """A progress line with the node's state (``pod-a: CREATING (40 s)``) while an
        operation on it runs."""
        if operation.get("done"):
            return  # the wait for the node's state that follows shows it
        try:
            node = self.client.find_node(self.project, self.zone, self.name)
        except TpuApiError as exc:  # a read for the progress line only: the wait goes on
            self.progress.line(self.name, "?", f", not read: {exc.reason or exc.status}")
            return
        self.progress.line(self.name, node.get("state", "?") if node else "gone")

    def wait_node(
        self, done: Callable[[dict[str, Any] | None], bool], what: str
    ) -> dict[str, Any] | None:
        return wait_node(
            self.client,
            self.project,
            self.zone,
            self.name,
            done,
            self.deadline,
            self.poll,
            what,
            progress=self.progress,
        )

    def settle(self, node: dict[str, Any] | None) -> dict[str, Any] | None:
        """Wait while the node is on its way somewhere (creating, deleting, stopping, ...)."""
        if node is None or node.get("state") not in TRANSITIONAL_STATES:
            return node
        if not self.wait or self.check:
            return node
        return self.wait_node(
            lambda n: n is None or n.get("state") not in TRANSITIONAL_STATES,
            "settled (not " + node["state"] + ")",
        )

    def wait_for(self, states: tuple[str, ...]) -> dict[str, Any] | None:
        if not self.wait:
            return self.client.find_node(self.project, self.zone, self.name)
        return self.wait_node(
            lambda n: n is not None and n.get("state") in states, " or ".join(states)
        )

    def delete(self, node: dict[str, Any], wait: bool | None = None) -> None:
        """Delete the node; ``wait`` (default: the wait option) waits until it is gone."""
        wait = self.wait if wait is None else wait
        if node.get("state") != "DELETING":
            operation = self.client.delete_node(self.project, self.zone, self.name)
            if wait:
                self.wait_operation(operation)
        if wait:
            self.wait_node(lambda n: n is None, "deleted")

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
        if self.journal:
            entry = self.journal_entry()
            if entry is not None and entry.get("step") != "creating":
                self.keep(entry["spec"], "creating")  # the old node is gone: the create is next
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
        if self.state != "absent":
            self.reveal(node)
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
        if self.check:
            return None
        if self.journal:
            self.keep(node_spec(node), "deleting")  # before the delete: a crash loses nothing
        self.delete(node)
        if self.journal and self.wait:
            self.keep(node_spec(node), "creating")
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
