# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""playbooks/status.yml's TPU API calls as registered results: which failed, for which project.

Read by the filters status_api_errors (one line per failed call) and status_table (the table's
notes), so both tell a failed call the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def project_name(place: Mapping[str, Any]) -> str:
    """The project a registered result of the loop over projects is about."""
    return str(place.get("project") or place.get("item") or "?")


def api_refused(place: Mapping[str, Any]) -> bool:
    """Whether a registered result is a failed API call: it says so (C(failed)), or it has no
    C(nodes) but a C(msg), as C(failed_when: false) leaves it (C(failed) false)."""
    return bool(place.get("failed") or (place.get("nodes") is None and place.get("msg")))


def status_api_errors(looked_in: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """One line per project whose API call failed."""
    errors = []
    for place in looked_in or []:
        if isinstance(place, Mapping) and api_refused(place):
            why = str(place.get("msg") or "no answer").strip()
            errors.append(f"TPU API error for project {project_name(place)}: {why[:1000]}")
    return errors
