"""Run the collection's TPU modules against an in-process emulator, for the module tests.

``run_module`` calls a module's ``main()`` with patched arguments (the real argument spec, check
mode and diff mode included) and returns what it would have returned to Ansible. ``Api`` wraps an
emulator served on a free local port and tells which API calls were made. ``inventory_source``
and ``parse_inventory`` point the tpu_vm inventory plugin at it.
"""

from __future__ import annotations

import importlib
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from ansible.inventory.data import InventoryData
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

from tools.tpu_emulator import Emulator, EmulatorServer

REPO = Path(__file__).resolve().parents[1]
TOKEN = "module-test-token"  # the emulator accepts any bearer token it is given
PROJECT = "demo"
ZONE = "us-central2-b"
MUTATING = ("POST", "PATCH", "DELETE")

if AnsibleCollectionConfig.collection_finder is None:
    init_plugin_loader([str(REPO / "collections")])


class ModuleExit(Exception):
    """Raised instead of exit_json/fail_json; ``result`` is what the module returned."""

    def __init__(self, result: dict[str, Any], failed: bool) -> None:
        super().__init__(result.get("msg", ""))
        self.result = result
        self.failed = failed


@dataclass
class Outcome:
    failed: bool
    result: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def msg(self) -> str:
        return str(self.result.get("msg", ""))

    def __getitem__(self, key: str) -> Any:
        return self.result[key]


def run_module(name: str, args: dict[str, Any], check: bool = False, diff: bool = False) -> Outcome:
    """Run ``cloudtpu.pod.<name>`` in this process and return its result."""
    module = importlib.import_module(f"ansible_collections.cloudtpu.pod.plugins.modules.{name}")
    full = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    warnings: list[str] = []

    def exit_json(self: basic.AnsibleModule, **kwargs: Any) -> None:
        raise ModuleExit(kwargs, failed=False)

    def fail_json(self: basic.AnsibleModule, msg: str = "", **kwargs: Any) -> None:
        raise ModuleExit(dict(kwargs, msg=msg), failed=True)

    def warn(self: basic.AnsibleModule, warning: str) -> None:
        warnings.append(warning)

    with (
        patch_module_args(full),
        mock.patch.object(basic.AnsibleModule, "exit_json", exit_json),
        mock.patch.object(basic.AnsibleModule, "fail_json", fail_json),
        mock.patch.object(basic.AnsibleModule, "warn", warn),
    ):
        try:
            module.main()
        except ModuleExit as exc:
            return Outcome(exc.failed, exc.result, warnings)
    raise AssertionError(f"{name} returned without exit_json or fail_json")


class Api:
    """An emulator on a free port, with helpers to seed it and read its request counters."""

    def __init__(self, server: EmulatorServer) -> None:
        self.server = server
        self.emulator = server.emulator

    @property
    def url(self) -> str:
        return self.server.api_url

    def auth(self, **extra: Any) -> dict[str, Any]:
        """Module arguments that point at this emulator (plus ``extra``)."""
        args = {
            "auth_kind": "accesstoken",
            "access_token": TOKEN,
            "base_url": self.url,
            "project": PROJECT,
            "retries": 1,
        }
        args.update(extra)
        return args

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.server.root_url}/_emulator/{path}", data=data, method=method
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def calls(self) -> dict[str, int]:
        """API requests so far by ``METHOD route`` (``POST nodes.create``, ...)."""
        return dict(self.emulator.stats()["by_route"])

    def mutating_calls(self) -> dict[str, int]:
        return {k: v for k, v in self.calls().items() if k.split(" ", 1)[0] in MUTATING}

    def reset_calls(self) -> None:
        self.emulator.reset_stats()

    def node(self, name: str, zone: str = ZONE) -> dict[str, Any] | None:
        with self.emulator.lock:
            found = self.emulator.projects[PROJECT].nodes[zone].get(name)
            return json.loads(json.dumps(found)) if found is not None else None

    def queued(self, name: str, zone: str = ZONE) -> dict[str, Any] | None:
        with self.emulator.lock:
            found = self.emulator.projects[PROJECT].queued[zone].get(name)
            return json.loads(json.dumps(found)) if found is not None else None


def state(*zones_nodes: tuple[str, list[dict[str, Any]]], **project: Any) -> dict[str, Any]:
    """An emulator state with project ``demo`` holding the given (zone, nodes) pairs."""
    zones: dict[str, Any] = {ZONE: {}, "us-east1-d": {}, "us-west4-a": {}}
    for zone, nodes in zones_nodes:
        zones[zone] = {"nodes": nodes}
    spec = {"zones": zones}
    spec.update(project)
    return {"settings": {"tokens": [TOKEN]}, "projects": {PROJECT: spec}}


@contextmanager
def serve(initial: dict[str, Any] | None = None, operation_delay: float = 0.05) -> Iterator[Api]:
    """An emulator for the duration of the block."""
    server = EmulatorServer(
        Emulator(initial if initial is not None else state(), operation_delay=operation_delay)
    ).start()
    try:
        yield Api(server)
    finally:
        server.stop()


def inventory_source(folder: Path, base_url: str, **extra: Any) -> Path:
    """A tpu_vm inventory source in ``folder`` for project ``demo`` at ``base_url``."""
    config = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": [PROJECT],
        "base_url": base_url,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        "retries": 1,
        **extra,
    }
    path = folder / "trust.tpu_vm.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def parse_inventory(path: Path) -> InventoryData:
    """The hosts and groups the tpu_vm plugin makes of the source ``path`` (no cache)."""
    data = InventoryData()
    inventory_loader.get("cloudtpu.pod.tpu_vm").parse(data, DataLoader(), str(path), cache=False)
    return data


def parse_source(folder: Path, api: Api, **options: Any) -> None:
    """Parse a tpu_vm source for project ``proj-a`` at ``api``, ``options`` over its settings: the
    option checks' tests, which look for the refusal this raises."""
    config = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": ["proj-a"],
        "base_url": api.url,
        "auth_kind": "accesstoken",
        "access_token": "x",
    }
    config.update(options)
    path = folder / "pod.tpu_vm.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    parse_inventory(path)
