"""Helpers for tests and benchmarks that run the emulator in-process or as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import catalog
from .model import Emulator
from .server import EmulatorServer

REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-token"


@contextmanager
def serve(state: dict[str, Any], operation_delay: float = 0.0) -> Iterator[EmulatorServer]:
    """An emulator on a free local port for the duration of the block."""
    server = EmulatorServer(Emulator(state, operation_delay=operation_delay)).start()
    try:
        yield server
    finally:
        server.stop()


def call(
    root_url: str,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = TOKEN,
) -> tuple[int, Any]:
    """One raw HTTP request to the emulator: (status, decoded JSON body)."""
    if not root_url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {root_url}")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(root_url + path, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


def admin(root_url: str, method: str, path: str, body: Any = None) -> Any:
    """Call an /_emulator/ endpoint and return its JSON; raises on an error status."""
    status, payload = call(root_url, method, "/_emulator/" + path.lstrip("/"), body, token=None)
    if status != 200:
        raise RuntimeError(f"emulator admin {method} {path} answered {status}: {payload}")
    return payload


def node(
    node_id: str,
    accelerator_type: str,
    state: str = "READY",
    external_ips: bool = True,
    labels: dict[str, str] | None = None,
    spot: bool = False,
    runtime_version: str = "",
) -> dict[str, Any]:
    """A node entry for a state file (runtime version: the type's usual one unless given)."""
    entry: dict[str, Any] = {
        "nodeId": node_id,
        "acceleratorType": accelerator_type,
        "runtimeVersion": runtime_version or catalog.default_runtime(accelerator_type),
        "state": state,
        "networkConfig": {"network": "default", "enableExternalIps": external_ips},
    }
    if labels:
        entry["labels"] = dict(labels)
    if spot:
        entry["schedulingConfig"] = {"spot": True}
    return entry


class EmulatorProcess:
    """The emulator CLI as a subprocess (what ansible-inventory talks to in integration tests)."""

    def __init__(
        self, state_file: Path, extra: tuple[str, ...] = (), python: str = sys.executable
    ) -> None:
        self.state_file = state_file
        self.python = python
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.api_url = ""

    @property
    def root_url(self) -> str:
        return self.api_url.rsplit("/v2", 1)[0]

    def start(self, timeout: float = 20.0) -> EmulatorProcess:
        cmd = [self.python, "-m", "tools.tpu_emulator", "--state", str(self.state_file)]
        cmd += ["--port", "0", *self.extra]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http"):
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.stop()
            raise RuntimeError(f"emulator did not start: {line!r} {err}")
        self.api_url = line
        while time.monotonic() < deadline:
            try:
                admin(self.root_url, "GET", "health")
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("emulator did not answer its health check")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
