"""What the service does on its own, driven through the admin routes: preemption, maintenance,
queued resources that fail, are suspended or get their capacity, and a zone's next request
failing."""

from __future__ import annotations

import copy
import threading
from typing import Any

from . import errors
from .backends import NodeInfo
from .common import Project
from .queued import DURATION_RE, expand_node_specs


class Admin:
    """Out-of-band node events."""

    # -- admin ---------------------------------------------------------------------------------

    def admin_node(
        self, project_id: str, zone: str, node_id: str, action: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Out-of-band changes the real service makes on its own: preemption, maintenance."""
        with self.lock:
            project = self.projects.get(project_id)
            if project is None or zone not in project.nodes:
                raise errors.location_not_found(f"projects/{project_id}/locations/{zone}")
            node = self._get_node(project, zone, node_id)
            info = self._node_info(project, zone, node)
            if action == "preempt":
                node["state"] = "PREEMPTED"
                node.pop("health", None)
                self._drop_external(node)
                self._suspend_owner(project, zone, node)
            elif action == "set":
                for key in ("state", "health", "healthDescription", "labels"):
                    if key in body:
                        node[key] = body[key]
            elif action == "maintenance":
                if node["state"] != "READY":
                    raise errors.failed_precondition(
                        f"Node {node_id} is {node['state']}; maintenance needs a READY node."
                    )
                node["health"] = "UNHEALTHY_MAINTENANCE"
            else:
                raise errors.ApiError(
                    404, f"unknown admin action {action!r}; use preempt, maintenance or set"
                )
            result = copy.deepcopy(node)
        if action == "preempt":
            self.backend.preempt(info)
        if action == "maintenance":
            self._maintenance(project, zone, node, info)
        return result

    def _maintenance(
        self, project: Project, zone: str, node: dict[str, Any], info: NodeInfo
    ) -> None:
        """Reboot the workers in the background; their addresses are read again afterwards."""
        generation = self._generation

        def worker() -> None:
            try:
                addresses = self.backend.maintenance(info)
            except Exception as exc:
                with self.lock:
                    node["healthDescription"] = f"maintenance failed: {exc}"
                return
            with self.lock:
                if (
                    generation != self._generation
                    or project.nodes[zone].get(info.node_id) is not node
                ):
                    return
                node["networkEndpoints"] = self._endpoints(addresses)
                node["health"] = "HEALTHY"
                node.pop("healthDescription", None)

        threading.Thread(target=worker, name=f"maint-{info.node_id}", daemon=True).start()

    # -- queued resources --------------------------------------------------------------------

    def _suspend_owner(self, project: Project, zone: str, node: dict[str, Any]) -> None:
        """A preempted node's queued resource is SUSPENDED (the service gave its capacity back)."""
        owner = node.get("queuedResource")
        qr = project.queued[zone].get(self._short(owner)) if owner else None
        if qr is not None and qr["state"].get("state") == "ACTIVE":
            qr["state"] = {"state": "SUSPENDED", "stateInitiator": "SERVICE"}

    def admin_queued(
        self, project_id: str, zone: str, qr_id: str, action: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """fail: the request becomes FAILED (body {message}); suspend: SUSPENDING, its nodes are
        deleted, then SUSPENDED; provision: capacity arrives for a WAITING_FOR_RESOURCES request;
        failNext (qr_id ``-``): the zone's next request(s) fail once accepted (body {message,
        times})."""
        with self.lock:
            project = self.projects.get(project_id)
            if project is None or zone not in project.queued:
                raise errors.location_not_found(f"projects/{project_id}/locations/{zone}")
            if qr_id == "-" and action == "failNext":
                times = int(body.get("times") or 1)
                message = str(body.get("message") or QUEUE_FAILURE)
                project.zones[zone].setdefault("fail_next", []).extend([message] * times)
                return {"fail_next": list(project.zones[zone]["fail_next"])}
            qr = self._get_qr(project, zone, qr_id)
            word = qr["state"].get("state")
            if action == "fail" and word not in ("DELETING", "FAILED"):
                self.fail_queued(qr, str(body.get("message") or QUEUE_FAILURE))
                self.release_queued(project, zone, qr, "FAILED")
            elif action == "suspend" and word == "ACTIVE":
                qr["state"] = {"state": "SUSPENDING", "stateInitiator": "SERVICE"}
                self.release_queued(project, zone, qr, "SUSPENDED")
            elif action == "provision" and word == "WAITING_FOR_RESOURCES":
                specs = expand_node_specs(qr["tpu"]["nodeSpec"], qr_id)
                self._provision(project, zone, qr, specs, "spot" in qr)
            elif action in ("fail", "suspend", "provision"):
                raise errors.failed_precondition(
                    f"Queued resource {qr['name']} is {word}; {action} needs "
                    + {"fail": "a state other than DELETING or FAILED", "suspend": "ACTIVE"}.get(
                        action, "WAITING_FOR_RESOURCES"
                    )
                    + "."
                )
            else:
                raise errors.ApiError(
                    404,
                    f"unknown admin action {action!r}; use fail, suspend, provision or failNext",
                )
            return copy.deepcopy(qr)

    @staticmethod
    def fail_queued(qr: dict[str, Any], message: str) -> None:
        qr["state"] = {
            "state": "FAILED",
            "stateInitiator": "SERVICE",
            "failedData": {"error": {"code": 8, "message": message}},
        }

    def release_queued(self, project: Project, zone: str, qr: dict[str, Any], final: str) -> None:
        """Delete the request's nodes in the background; then the request is ``final``."""
        nodes = [
            (node_id, node)
            for node_id, node in project.nodes[zone].items()
            if node.get("queuedResource") == qr["name"]
        ]
        for _, node in nodes:
            node["state"] = "DELETING"
        infos = [self._node_info(project, zone, node) for _, node in nodes]
        generation = self._generation

        def worker() -> None:
            for info in infos:
                try:
                    self.backend.delete(info)
                except Exception:
                    pass
            with self.lock:
                if generation != self._generation:
                    return
                for node_id, node in nodes:
                    if project.nodes[zone].get(node_id) is node:
                        del project.nodes[zone][node_id]
                if qr["state"].get("state") in ("SUSPENDING", final):
                    qr["state"]["state"] = final

        threading.Thread(target=worker, name=f"release-{qr['name'][-12:]}", daemon=True).start()

    def _run_duration_ends(self, project: Project, zone: str, qr: dict[str, Any]) -> None:
        """A flex-start request (runDuration.maxRunDuration) is suspended when its time is up."""
        seconds = parse_duration(((qr.get("runDuration") or {}).get("maxRunDuration")) or "")
        if seconds is None:
            return
        generation = self._generation

        def end() -> None:
            with self.lock:
                if generation != self._generation or qr["state"].get("state") != "ACTIVE":
                    return
                qr["state"] = {"state": "SUSPENDING", "stateInitiator": "SERVICE"}
                self.release_queued(project, zone, qr, "SUSPENDED")

        timer = threading.Timer(seconds, end)
        timer.daemon = True
        timer.start()


QUEUE_FAILURE = "The request could not be fulfilled: no capacity in the zone for its validity."


def parse_duration(text: str) -> float | None:
    """Seconds of a google.protobuf.Duration in JSON ("3600s", "1.5s"); None if not one."""
    match = DURATION_RE.match(str(text))
    return float(match.group(1)) if match else None
