"""locations.list/get and acceleratorTypes.list."""

from __future__ import annotations

import fnmatch
from typing import Any

from . import catalog
from .common import Project


class Locations:
    """The project's zones and the accelerator types each offers."""

    def _location(self, project: Project, zone: str) -> dict[str, Any]:
        return {
            "name": f"projects/{project.id}/locations/{zone}",
            "locationId": zone,
            "displayName": zone,
            "labels": {},
            "metadata": {},
        }

    def _locations_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        items = [self._location(project, zone) for zone in sorted(project.zones)]
        return 200, self._page(items, "locations", query, f"{project.id}/locations")

    def _locations_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, self._location(project, params["z"])

    def _zone_types(self, project: Project, zone: str) -> list[str]:
        patterns = project.zones[zone]["accelerator_types"]
        return [
            name
            for name in catalog.offered_types()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
        ]

    def _acceleratortypes_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        items = [
            {
                "name": f"projects/{project.id}/locations/{zone}/acceleratorTypes/{name}",
                "type": name,
            }
            for name in self._zone_types(project, zone)
        ]
        return 200, self._page(items, "acceleratorTypes", query, f"{project.id}/{zone}/types")
