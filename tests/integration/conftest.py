"""Integration test setup: the TPU API emulator as a subprocess and ansible-inventory runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bad_input import RoleRuns
from tests.integration.lifecycle_support import EmulatorCli, ansible_env, plain
from tools.tpu_emulator.testing import REPO, TOKEN, EmulatorProcess, admin

# The toolchain that runs the tests: .venv, or .venv-next under `make test-next`.
VENV_BIN = Path(sys.executable).parent


def pytest_configure(config: object) -> None:
    """Under pytest-xdist (make integration), each worker runs whole test files one after the
    other, as a single pytest would, with a fact cache of its own: ansible.cfg's cache is one
    folder keyed by host name, and test pods of two files running at once share host names
    (demo-w0). A test that needs a cache of its own still sets ANSIBLE_CACHE_PLUGIN_CONNECTION."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(REPO / ".cache" / f"facts-{worker}")


@dataclass
class InventoryRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        return plain(json.loads(self.stdout))

    def hosts(self, group: str = "all") -> list[str]:
        """Hosts of a group, its children's included, from the --list JSON."""
        data = json.loads(self.stdout)
        found: set[str] = set()
        pending = [group]
        while pending:
            entry = data.get(pending.pop(), {})
            found.update(entry.get("hosts", []))
            pending.extend(entry.get("children", []))
        return sorted(found)

    def hostvars(self, host: str) -> dict[str, Any]:
        return self.data["_meta"]["hostvars"][host]


def ansible_inventory(source: Path, *args: str, **env_extra: str) -> InventoryRun:
    """Run .venv/bin/ansible-inventory with the repository's ansible.cfg."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("ANSIBLE_", "CLOUDTPU_", "GCP_")):
            del env[key]
    env.update(
        {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCAL_TEMP": str(source.parent / ".ansible-tmp"),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    env.update(env_extra)
    result = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(source), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return InventoryRun(result.returncode, result.stdout, result.stderr)


class Emulator:
    """Handle on the emulator subprocess for tests."""

    def __init__(self, process: EmulatorProcess) -> None:
        self.process = process
        self.api_url = process.api_url
        self.root_url = process.root_url

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        return admin(self.root_url, method, path, body)

    def requests(self) -> int:
        return self.admin("GET", "stats")["requests"]

    def source(self, directory: Path, name: str = "x.tpu_vm.yml", **options: Any) -> Path:
        """An inventory source for this emulator; options override the defaults."""
        config: dict[str, Any] = {
            "plugin": "cloudtpu.pod.tpu_vm",
            "base_url": self.api_url,
            "auth_kind": "accesstoken",
            "access_token": TOKEN,
            "retry_backoff": 0.05,
            "retry_max_sleep": 0.2,
        }
        config.update(options)
        path = directory / name
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return path


def start_emulator(state: dict[str, Any], tmp_dir: Path) -> Iterator[Emulator]:
    """Write ``state`` and serve it from the emulator CLI for the duration of a fixture."""
    state_file = tmp_dir / "state.yml"
    state_file.write_text(yaml.safe_dump(state), encoding="utf-8")
    process = EmulatorProcess(state_file, extra=("--operation-delay", "0"))
    process.start()
    try:
        yield Emulator(process)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def refusals(request: pytest.FixtureRequest) -> RoleRuns:
    """The refusals of the test module's TABLE of bad role inputs, role by role as the tests ask
    (tests/bad_input.py; the roles in its FACTS gather facts first)."""
    return RoleRuns(request.module.TABLE, getattr(request.module, "FACTS", ()))


@pytest.fixture(scope="module")
def emulator(request: pytest.FixtureRequest) -> Iterator[EmulatorCli]:
    """The emulator CLI on its in-memory backend, one for the test module; each operation takes
    the module's EMULATOR_DELAY seconds (0.1 when it sets none). A module that needs the Docker
    backend defines an emulator fixture of its own."""
    cli = EmulatorCli(backend="memory", delay=getattr(request.module, "EMULATOR_DELAY", 0.1))
    cli.start()
    try:
        yield cli
    finally:
        cli.stop()


@pytest.fixture
def env(emulator: EmulatorCli, tmp_path: Path) -> dict[str, str]:
    """ansible-* runs' environment against the module's emulator, put back to its initial state
    first (POST reset), with a temporary folder of the test's own."""
    emulator.admin("POST", "reset")
    return ansible_env(emulator.api_url, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
