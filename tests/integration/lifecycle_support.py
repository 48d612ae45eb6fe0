"""Shared pieces of the lifecycle tests: the emulator CLI as a subprocess (either backend),
ansible-* runs from the repository with a clean environment, reading their output, and a local
port and a GET for tests that go through an SSH tunnel."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import forked_cli

REPO = Path(__file__).resolve().parents[2]
# The toolchain that runs the tests: .venv, or .venv-next under `make test-next`.
BIN = Path(sys.executable).parent
DEMO_STATE = REPO / "tools" / "tpu_emulator" / "demo-state.yml"
DEMO_INVENTORY = REPO / "inventories" / "demo"
PROJECT = "demo-project"
ZONE = "us-central2-b"
TOKEN = "demo-token"  # the demo inventory's token; the emulator accepts any
_RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$")


class EmulatorCli:
    """``python -m tools.tpu_emulator`` with the given state and backend, until stop()."""

    def __init__(
        self,
        backend: str = "memory",
        delay: float = 0.1,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.backend = backend
        self.host = host
        self.delay = delay
        self.env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
        self.proc: subprocess.Popen[str] | None = None
        self.api_url = ""
        self.stderr = ""

    @property
    def root_url(self) -> str:
        return self.api_url.rsplit("/v2", 1)[0]

    def start(self) -> EmulatorCli:
        cmd = [sys.executable, "-m", "tools.tpu_emulator", "--state", str(DEMO_STATE)]
        cmd += ["--host", self.host, "--port", "0", "--backend", self.backend]
        cmd += ["--operation-delay", str(self.delay)]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http"):
            self.stop()
            raise RuntimeError(f"the emulator did not start: {line!r}\n{self.stderr}")
        # Listening on every address (0.0.0.0), it is reached on loopback from here.
        self.api_url = line.replace("//0.0.0.0:", "//127.0.0.1:")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.stderr = self.proc.stderr.read()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.proc = None

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.root_url}/_emulator/{path}", data=data, method=method
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")

    def node(self, name: str, zone: str = ZONE) -> dict[str, Any] | None:
        for entry in self.admin("GET", "state")["projects"][PROJECT]["zones"][zone]["nodes"]:
            if entry["name"].rsplit("/", 1)[-1] == name:
                return entry
        return None

    def mutating_calls(self) -> dict[str, int]:
        routes = self.admin("GET", "stats")["by_route"]
        return {
            k: v for k, v in routes.items() if k.split(" ", 1)[0] in ("POST", "PATCH", "DELETE")
        }


def ansible_env(api_url: str, **extra: str) -> dict[str, str]:
    """Environment for ansible-* runs against the emulator: nothing inherited from the caller's
    ANSIBLE_/CLOUDTPU_/GCP_ settings, the repository's ansible.cfg, the demo credentials."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANSIBLE_", "CLOUDTPU_", "GCP_", "PY_COLORS"))
    }
    env.update(
        {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "CLOUDTPU_API_ENDPOINT": api_url,
            "GCP_AUTH_KIND": "accesstoken",
            "GCP_ACCESS_TOKEN": TOKEN,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    env.update(extra)
    return env


@dataclass
class Run:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def recap(self) -> dict[str, dict[str, int]]:
        """PLAY RECAP counts per host."""
        found: dict[str, dict[str, int]] = {}
        in_recap = False
        for line in self.stdout.splitlines():
            if line.startswith("PLAY RECAP"):
                in_recap = True
                continue
            match = _RECAP.match(line.strip()) if in_recap else None
            if match:
                counts = dict(pair.split("=") for pair in match["counts"].split())
                found[match["host"]] = {k: int(v) for k, v in counts.items()}
            elif in_recap and line.strip() and not match:
                in_recap = False
        return found


def run(args: list[str], env: dict[str, str], timeout: float = 600, on_start: Any = None) -> Run:
    """The command, forked (tests/forked_cli.py); ``on_start`` gets its process id."""
    started = time.monotonic()
    done = forked_cli.run(args, cwd=REPO, env=env, timeout=timeout, on_start=on_start)
    return Run(args, done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def playbook(
    name: str, env: dict[str, str], *args: str, timeout: float = 900, on_start: Any = None
) -> Run:
    """ansible-playbook -i inventories/demo playbooks/<name> ARGS."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), f"playbooks/{name}", *args]
    return run(cmd, env, timeout, on_start)


def extra_vars(values: dict[str, Any]) -> list[str]:
    """``-e JSON`` arguments (JSON keeps types: booleans, lists, numbers)."""
    return ["-e", json.dumps(values)]


def plain(value: Any) -> Any:
    """ansible-inventory --list JSON with the {"__ansible_unsafe": ...} markers removed."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def inventory(env: dict[str, str]) -> dict[str, Any]:
    result = run([str(BIN / "ansible-inventory"), "-i", str(DEMO_INVENTORY), "--list"], env, 120)
    assert result.returncode == 0, result.tail()
    return plain(json.loads(result.stdout))


def status_lines(result: Run) -> str:
    """The status table's lines, as status.yml prints them in its debug message."""
    shown = result.stdout.split("TASK [Show nodes and workers]", 1)[-1].split("PLAY RECAP", 1)[0]
    shown = shown.split("TASK [", 1)[0]
    return "\n".join(
        json.loads(line.strip().rstrip(","))
        for line in shown.splitlines()
        if line.strip().startswith('"') and not line.strip().startswith('"msg"')
    )


def step(name: str, result: Run) -> Run:
    """Print how long a step took and how it ended (pytest -s shows it); returns the result."""
    print(f"[{result.seconds:6.1f} s] {name}: rc={result.returncode}")
    return result


def unchanged(result: Run) -> None:
    """Assert that the run changed nothing on any host."""
    recap = result.recap()
    assert recap, result.tail()
    assert all(c["changed"] == 0 for c in recap.values()), recap


def free_port() -> int:
    """A local port nothing listens on, below the kernel's range for outgoing connections (so
    that it stays free for the rest of the module)."""
    for port in random.sample(range(20000, 30000), 50):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free local port in 20000-29999")


def get_through(tunnel: subprocess.Popen[str], url: str, seconds: float) -> str:
    """The body at url, retried while the tunnel runs until it answers or seconds have passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except OSError:
            if tunnel.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.3)
