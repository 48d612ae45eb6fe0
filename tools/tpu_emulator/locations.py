"""locations.list/get, acceleratorTypes.list/get and runtimeVersions.list/get."""

from __future__ import annotations

import fnmatch
from typing import Any

from . import catalog, errors
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
            self._accelerator_type(project, zone, name) for name in self._zone_types(project, zone)
        ]
        return 200, self._page(items, "acceleratorTypes", query, f"{project.id}/{zone}/types")

    @staticmethod
    def _accelerator_type(project: Project, zone: str, name: str) -> dict[str, Any]:
        return {
            "name": f"projects/{project.id}/locations/{zone}/acceleratorTypes/{name}",
            "type": name,
        }

    def _acceleratortypes_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, name = params["z"], params["t"]
        if name not in self._zone_types(project, zone):
            raise errors.not_found(
                f"projects/{project.id}/locations/{zone}/acceleratorTypes/{name}"
            )
        return 200, self._accelerator_type(project, zone, name)

    # -- runtime versions ----------------------------------------------------------------------

    def _zone_runtimes(self, project: Project, zone: str) -> list[str]:
        """The named runtime versions of the families this zone offers (catalog order)."""
        families = [catalog.split_type(name) for name in self._zone_types(project, zone)]
        names: list[str] = []
        for family in dict.fromkeys(parts[0] for parts in families if parts):
            for version in catalog.RUNTIMES.get(family, ()):
                if "*" not in version and version not in names:
                    names.append(version)
        return names

    @staticmethod
    def _runtime_version(project: Project, zone: str, version: str) -> dict[str, Any]:
        return {
            "name": f"projects/{project.id}/locations/{zone}/runtimeVersions/{version}",
            "version": version,
        }

    def _runtimeversions_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        items = [
            self._runtime_version(project, zone, v) for v in self._zone_runtimes(project, zone)
        ]
        return 200, self._page(items, "runtimeVersions", query, f"{project.id}/{zone}/runtimes")

    def _runtimeversions_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """A listed version, or one a family of the zone boots (tpu-vm-tf-2.16.1 and the like:
        the catalog keeps those as patterns, so the list cannot show them)."""
        zone, version = params["z"], params["v"]
        if version not in self._zone_runtimes(project, zone) and not any(
            catalog.runtime_fits(name, version) for name in self._zone_types(project, zone)
        ):
            raise errors.not_found(
                f"projects/{project.id}/locations/{zone}/runtimeVersions/{version}"
            )
        return 200, self._runtime_version(project, zone, version)
