# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Creating a node when the API's answer to the create may be lost.

A create that got no answer (a read timeout: ``OUTCOME_UNKNOWN`` from the transport) or a 500
may still have been carried out; sending it again blindly would then fail with 409
ALREADY_EXISTS for a node that this very call made. So :func:`create_or_find` looks (GET)
first, and sends the create again only when the node is not there. A 409 is answered the same
way: the node that exists is returned, and the caller (``NodeTask`` in the tpu_node module)
adopts it when its spec is the one asked for, or refuses it with the differences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuApiError,
    TpuClient,
)


def unsure(exc: TpuApiError) -> bool:
    """Whether a failed create may have been carried out all the same."""
    return exc.reason == "OUTCOME_UNKNOWN" or exc.status == 500


def create_or_find(
    client: TpuClient,
    project: str,
    zone: str,
    name: str,
    body: Mapping[str, Any],
    attempts: int | None = None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    """Create node ``name``; returns ``(operation, None, False)`` when the API accepted the
    create, or ``(None, node, ours)`` when the node exists (a 409, or found by the look after a
    create whose outcome was unknown). ``ours`` is true when an earlier attempt of this call
    may have made it. Other errors, and the last attempt's, are raised."""
    attempts = max(1, attempts or client.retries)
    maybe_ours = False
    for attempt in range(1, attempts + 1):
        try:
            return client.create_node(project, zone, name, body), None, False
        except TpuApiError as exc:
            if exc.status != 409 and not unsure(exc):
                raise
            maybe_ours = maybe_ours or unsure(exc)
            node = client.find_node(project, zone, name)
            if node is not None:
                return None, node, maybe_ours
            # Not there (yet): send the create again; a 409 to it is answered by a look too.
            if attempt == attempts:
                raise
            client._sleep(client.backoff_delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover
