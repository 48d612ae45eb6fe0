"""What the service does on its own, driven through the admin routes: preemption, maintenance."""

from __future__ import annotations

import copy
import threading
from typing import Any

from . import errors
from .backends import NodeInfo
from .common import Project


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
            except Exception as exc:  # noqa: BLE001 - a failing backend leaves the node unhealthy
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
