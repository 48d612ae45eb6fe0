# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Long-running operations of the TPU API: what a create, delete, start, stop or update of a
node or a queued resource returns. :class:`TpuOperations` reads one by its name and waits until
it is done, raising :class:`TpuApiError` when it failed or took too long.

:class:`TpuOperations` sits between :class:`TpuApiTransport` (``tpu_api_transport.py``, how a
call is sent) and :class:`TpuClient` (``tpu_api.py``, one method per call), which inherits
these methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_errors import TpuApiError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_transport import (
    TpuApiTransport,
    _zone_of,
)


class TpuOperations(TpuApiTransport):
    """The operations calls of the client (see :class:`TpuClient` for the arguments)."""

    def get_operation(self, name: str) -> dict[str, Any]:
        """An operation by its full name ``projects/p/locations/z/operations/x``."""
        return self.request(
            "GET",
            name,
            zone=_zone_of(name),
            permission="tpu.operations.get",
            resource=f"operation {name}",
        )

    def wait_operation(
        self,
        operation: Mapping[str, Any],
        timeout: float = 1800.0,
        poll: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        each: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Poll an operation until it is done; return it, or raise if it failed or timed out.
        ``each`` is called with the operation after every read (a module's progress line)."""
        current = dict(operation)
        deadline = clock() + timeout
        while not current.get("done"):
            if clock() >= deadline:
                raise TpuApiError(
                    f"Operation {current.get('name', '?')} is not done after {timeout:.0f} s. It "
                    "goes on in the background; look at it with 'gcloud compute tpus tpu-vm "
                    "operations describe' or wait longer (timeout).",
                    reason="TIMEOUT",
                )
            if not current.get("name"):
                raise TpuApiError(
                    "The TPU API answered with an operation that is not done and has no name, so "
                    "it cannot be followed; check the base_url option.",
                    reason="BAD_RESPONSE",
                )
            self._sleep(poll)
            current = self.get_operation(str(current["name"]))
            if each is not None:
                each(current)
        error = current.get("error")
        if isinstance(error, Mapping):
            meta = current.get("metadata") or {}
            raise TpuApiError(
                "Operation {} on {} failed: {} (code {}).".format(
                    current.get("name", "?"),
                    meta.get("target", "?") if isinstance(meta, Mapping) else "?",
                    error.get("message", "no message"),
                    error.get("code", "?"),
                ),
                reason="OPERATION_FAILED",
                api_message=str(error.get("message", "")),
            )
        return current
