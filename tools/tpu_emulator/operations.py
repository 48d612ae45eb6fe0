"""Long-running operations: created by every change, finished by a background thread."""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from . import errors
from .common import API_VERSION, TYPE_PREFIX, Project, grpc_code, now_rfc3339


class Operations:
    """operations.list/get/delete/cancel, and the operation life cycle the other resources use."""

    def _operation(self, project: Project, zone: str, verb: str, target: str) -> dict[str, Any]:
        op_id = f"operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        op = {
            "name": f"projects/{project.id}/locations/{zone}/operations/{op_id}",
            "metadata": {
                "@type": TYPE_PREFIX + "OperationMetadata",
                "createTime": now_rfc3339(),
                "target": target,
                "verb": verb,
                "cancelRequested": False,
                "apiVersion": API_VERSION,
            },
            "done": False,
        }
        self.operations[op["name"]] = op
        return op

    def _finish(
        self, op: dict[str, Any], response: dict[str, Any] | None, error: errors.ApiError | None
    ) -> None:
        op["done"] = True
        op["metadata"]["endTime"] = now_rfc3339()
        if error is not None:
            op["error"] = {"code": grpc_code(error.status), "message": error.message}
        elif response is not None:
            op["response"] = response

    def _run(
        self,
        op: dict[str, Any],
        slow: Callable[[], Any],
        apply: Callable[[Any], dict[str, Any] | None],
    ) -> None:
        """Run ``slow`` (a backend call) after the operation delay without the lock, then
        ``apply`` its result under the lock and complete the operation."""
        generation = self._generation

        def worker() -> None:
            time.sleep(float(self.settings["operation_delay"]))
            try:
                result = slow()
            except Exception as exc:
                with self.lock:
                    if generation == self._generation:
                        self._finish(op, None, errors.ApiError(500, f"backend failed: {exc}"))
                return
            with self.lock:
                if generation != self._generation:
                    return
                try:
                    response = apply(result)
                except errors.ApiError as exc:
                    self._finish(op, None, exc)
                    return
                self._finish(op, response, None)

        threading.Thread(target=worker, name=f"op-{op['name'][-12:]}", daemon=True).start()

    # -- operations ----------------------------------------------------------------------------

    def _operations_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        prefix = (
            f"projects/{project.id}/locations/{zone}/operations/"
            if zone != "-"
            else f"projects/{project.id}/"
        )
        items = [op for name, op in sorted(self.operations.items()) if name.startswith(prefix)]
        return 200, self._page(items, "operations", query, f"{project.id}/{zone}/operations")

    def _operations_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        name = f"projects/{project.id}/locations/{params['z']}/operations/{params['o']}"
        op = self.operations.get(name)
        if op is None:
            raise errors.not_found(name)
        return 200, copy.deepcopy(op)

    def _operations_delete(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """Forget the operation; the change it stands for goes on (as the service does)."""
        name = f"projects/{project.id}/locations/{params['z']}/operations/{params['o']}"
        if self.operations.pop(name, None) is None:
            raise errors.not_found(name)
        return 200, {}

    def _operations_cancel(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """Best effort, as the API allows: the request is recorded (metadata.cancelRequested)
        and the operation still runs to its end; a finished one is left as it is."""
        name = f"projects/{project.id}/locations/{params['z']}/operations/{params['o']}"
        op = self.operations.get(name)
        if op is None:
            raise errors.not_found(name)
        if not op["done"]:
            op["metadata"]["cancelRequested"] = True
        return 200, {}
