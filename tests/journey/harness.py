"""The journey harness: README.md's marked blocks run in bash, in a user's order, on one demo pod.

Each step is one ``bash`` process in the repository folder, with a user's environment: what the
caller had, minus every ANSIBLE_*, CLOUDTPU_*, GCP_* and DEMO_* setting and minus the project's
.venv on PATH. A step after ``demo-env`` first runs the README's ``eval "$(tools/demo.sh env)"``
block itself, as a user's shell would have done, then the step's block, under ``set -e``.
Only DEMO_DIR, DEMO_PORT and CLOUDTPU_EMULATOR_ID are set by the harness: they keep this pod
apart from a user's own demo (folder, port, container labels) and are not README text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.journey.readme_blocks import Block, extract

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DEMO_DIR = REPO / ".cache" / "journey-demo"
STEP_SLACK = float(os.environ.get("JOURNEY_STEP_SLACK") or 2)
LOG_DIR = REPO / ".cache" / "journey"
PROJECT_DIR = REPO / "myproject"
NODE = "demo"
PROJECT = "demo-project"
ZONE = "us-central2-b"
WORKERS = ["demo-w0", "demo-w1"]
LABEL = "cloudtpu.emulator"
WORKER_LABEL = "cloudtpu.worker"
PYTHON_M = [str(REPO / ".venv" / "bin" / "python"), "-m"]

# The README's journey blocks, in the order a user types them after cloning.
STEPS = (
    "demo-up",
    "demo-env",
    "sync",
    "run-quoted",
    "run-pipe",
    "run-fail",
    "run-detach",
    "logs",
    "status",
    "preempt",
    "status-preempted",
    "recover",
    "status-recovered",
    "run-again",
    "ssh",
    "reset",
    "reset-kill",
    "teardown",
)
# Steps that run before the user has the demo's environment in their shell.
BEFORE_ENV = ("demo-up", "demo-env")
_STRIPPED = ("ANSIBLE_", "CLOUDTPU_", "GCP_", "DEMO_", "PY_COLORS")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def docker_unavailable() -> str:
    if shutil.which("docker") is None:
        return "the docker command is not installed (make docker installs it)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"no Docker daemon answers (make docker starts one): {info.stderr.strip()[:200]}"
    return ""


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    log: Path

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def tail(self, lines: int = 80) -> str:
        return f"(full output: {self.log})\n" + "\n".join(self.output.splitlines()[-lines:])


@dataclass
class Journey:
    """State shared by the ordered steps of one journey: the pod, its labels, timings."""

    blocks: dict[str, Block]
    port: int
    emulator_id: str
    demo_dir: Path = DEMO_DIR
    steps: tuple[str, ...] = STEPS
    name: str = ""  # "" is the main walkthrough; others are marked <!-- journey NAME: STEP -->
    env_block: str = ""  # the main walkthrough's demo-env block, run before every later step
    before_env: tuple[str, ...] = BEFORE_ENV
    node_id: str = NODE
    runs: dict[str, StepRun] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_readme(
        cls,
        name: str = "",
        steps: tuple[str, ...] = STEPS,
        before_env: tuple[str, ...] = BEFORE_ENV,
        node_id: str = NODE,
    ) -> Journey:
        """Journey ``name`` of README.md. A journey other than the main walkthrough runs on a
        demo of its own (.cache/journey-demo-NAME) and takes the user's shell environment from
        the walkthrough's ``demo-env`` block, as a reader who follows the README would."""
        text = README.read_text(encoding="utf-8")
        blocks = extract(text, steps, journey=name)
        env_block = extract(text, STEPS)["demo-env"].text
        demo_dir = DEMO_DIR if not name else DEMO_DIR.with_name(f"{DEMO_DIR.name}-{name}")
        return cls(
            blocks=blocks,
            port=free_port(),
            emulator_id=f"journey{name.replace('-', '')}{os.getpid()}",
            demo_dir=demo_dir,
            steps=steps,
            name=name,
            env_block=env_block,
            before_env=before_env,
            node_id=node_id,
        )

    @property
    def log_dir(self) -> Path:
        return LOG_DIR if not self.name else LOG_DIR / self.name

    # -- running README blocks ----------------------------------------------------------------

    def env(self) -> dict[str, str]:
        venv_bin = str(REPO / ".venv" / "bin")
        env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED)}
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
        env["PATH"] = os.pathsep.join(path)
        env.update(
            DEMO_DIR=str(self.demo_dir),
            DEMO_PORT=str(self.port),
            CLOUDTPU_EMULATOR_ID=self.emulator_id,
        )
        return env

    def script(self, name: str, probe: str = "") -> str:
        """The bash script of one step: the README's env block (after demo-env), the step's
        block, then an optional probe of the harness's own (never README text)."""
        parts = ["set -e\n"]
        if name not in self.before_env:
            parts.append(self.env_block)
        parts.append(self.blocks[name].text)
        if probe:
            parts.append(f"# journey probe, not README text\n{probe}\n")
        return "".join(parts)

    def run(self, name: str, timeout: float = 900, probe: str = "") -> StepRun:
        """Run one step; its output goes to .cache/journey/NN-STEP.log (stderr: .err) as it
        comes, for `tail -f` while a long step runs. ``timeout`` is the step's limit on a machine
        of the reference speed, times JOURNEY_STEP_SLACK (2): the limit is there to end a step
        that hangs, and machines of one kind differ several-fold in speed."""
        timeout *= STEP_SLACK
        script = self.script(name, probe)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{self.steps.index(name) + 1:02d}-{name}.log"
        err = log.with_suffix(".err")
        log.write_text(f"$ bash -c <<'SCRIPT'\n{script}SCRIPT\n", encoding="utf-8")
        started = time.monotonic()
        with log.open("a", encoding="utf-8") as out, err.open("w", encoding="utf-8") as errors:
            mark = out.tell()
            process = subprocess.Popen(
                ["bash", "-c", script],
                cwd=REPO,
                env=self.env(),
                stdout=out,
                stderr=errors,
                start_new_session=True,  # a step over its time is ended with all it started
            )
            try:
                code = process.wait(timeout=timeout)
                note = ""
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
                note = f"\njourney: step {name} did not finish within {timeout:.0f} s"
        seconds = time.monotonic() - started
        with log.open(encoding="utf-8") as out:
            out.seek(mark)
            stdout = out.read()
        with log.open("a", encoding="utf-8") as out:
            out.write(f"--- exit {code} after {seconds:.1f} s{note}\n")
        stderr = err.read_text(encoding="utf-8") + note
        result = StepRun(name, code, stdout, stderr, seconds, log)
        self.runs[name] = result
        print(f"[{seconds:6.1f} s] {name}: exit {code} (log {log.relative_to(REPO)})")
        return result

    # -- looking at the pod from outside -----------------------------------------------------

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """The emulator's admin API (/_emulator/...), which stands in for what Google does."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/_emulator/{path}", data=data, method=method
        )
        with urllib.request.urlopen(request, timeout=180) as response:
            return json.loads(response.read() or b"null")

    def zone(self) -> dict[str, Any]:
        """The emulator's state of the demo zone: its nodes and queued resources."""
        return self.admin("GET", "state")["projects"][PROJECT]["zones"][ZONE]

    def node(self, node_id: str = "") -> dict[str, Any]:
        wanted = node_id or self.node_id
        zone = self.zone()
        for entry in zone["nodes"]:
            if entry["name"].rsplit("/", 1)[-1] == wanted:
                return entry
        raise AssertionError(f"the emulator has no node {wanted}: {zone['nodes']}")

    def addresses(self, node_id: str = "") -> list[str]:
        return [e["ipAddress"] for e in self.node(node_id).get("networkEndpoints", [])]

    def containers(self) -> dict[str, dict[str, str]]:
        """This journey's worker containers, by worker index: name, id, state, hostname."""
        names = docker(
            "ps", "-a", "--filter", f"label={LABEL}={self.emulator_id}", "--format", "{{.Names}}"
        ).split()
        found = {}
        for name in names:
            fmt = (
                f'{{{{index .Config.Labels "{WORKER_LABEL}"}}}} {{{{.Id}}}} {{{{.State.Status}}}} '
                "{{.Config.Hostname}}"
            )
            worker, ident, state, hostname = docker("inspect", "--format", fmt, name).split()
            found[worker] = {"name": name, "id": ident, "state": state, "hostname": hostname}
        return found

    def worker(self, index: int) -> dict[str, str]:
        containers = self.containers()
        assert str(index) in containers, f"no container for worker {index}: {containers}"
        return containers[str(index)]

    def exec(self, index: int, command: str, check: bool = True) -> str:
        """A shell command in worker ``index``'s container, as root (the test's own hands)."""
        return docker("exec", self.worker(index)["name"], "bash", "-c", command, check=check)

    def exists(self, index: int, path: str) -> bool:
        return self.exec(index, f"test -e {path} && echo yes || echo no").strip() == "yes"

    def alive(self, index: int, pid: str) -> bool:
        return self.exec(index, f"kill -0 {pid} 2>/dev/null && echo yes || echo no") == "yes\n"

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label={LABEL}={self.emulator_id}"
        return {
            "containers": docker("ps", "-a", "--filter", label, "--format", "{{.Names}}").split(),
            "networks": docker("network", "ls", "--filter", label, "--format", "{{.Name}}").split(),
        }

    def emulator_pid(self) -> int | None:
        pidfile = self.demo_dir / "emulator.pid"
        try:
            return int(pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    # -- clean-up -----------------------------------------------------------------------------

    def down(self) -> str:
        """Take the pod down whatever state the journey left it in (tools/demo.sh down), then
        remove any container or network still labelled with this journey's emulator id."""
        done = subprocess.run(
            [str(REPO / "tools" / "demo.sh"), "down"],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        cleanup = subprocess.run(
            [*PYTHON_M, "tools.tpu_emulator.docker_backend", "cleanup", "--id", self.emulator_id],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            check=False,
        )
        return f"demo.sh down: exit {done.returncode}; cleanup: {cleanup.stdout.strip()}"

    def timings(self) -> str:
        rows = [
            f"  {r.name:<18} {r.seconds:7.1f} s  exit {r.returncode}" for r in self.runs.values()
        ]
        total = time.monotonic() - self.started
        return "\n".join(["journey timings:", *rows, f"  {'total':<18} {total:7.1f} s"])


@contextmanager
def journey_pod(name: str = "", project: bool = True, **options: Any) -> Iterator[Journey]:
    """One journey from a clean start to a clean end: skipped (saying why) without Docker; a
    pod left by an earlier stopped run is stopped first, as a fresh clone would not have it;
    whatever the steps leave is taken down at the end and the step timings printed. ``project``:
    the journey's steps make ./myproject (it must not exist before and is removed after)."""
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED the README journey {name or 'Day two'}: {reason}")
        pytest.skip(reason)
    if project and PROJECT_DIR.exists():
        pytest.fail(
            f"{PROJECT_DIR} exists: the README's sync step creates ./myproject; move it away "
            "(a journey stopped before its end leaves it behind)"
        )
    state = Journey.from_readme(name, **options)
    subprocess.run([str(REPO / "tools" / "emulator.sh"), "stop", str(state.demo_dir)], check=False)
    subprocess.run(["rm", "-rf", str(state.demo_dir)], check=True)
    print(
        f"journey {name or 'Day two'}: DEMO_DIR={state.demo_dir} DEMO_PORT={state.port} "
        f"emulator id {state.emulator_id}"
    )
    try:
        yield state
    finally:
        torn_down = any(r.name == "teardown" and r.returncode == 0 for r in state.runs.values())
        if not torn_down or any(state.leftovers().values()):
            print(f"journey clean-up: {state.down()}")
        if project:
            subprocess.run(["rm", "-rf", str(PROJECT_DIR)], check=False)
        timings = state.timings()
        state.log_dir.mkdir(parents=True, exist_ok=True)
        (state.log_dir / "timings.txt").write_text(timings + "\n", encoding="utf-8")
        print(timings)


# -- what steps assert with ------------------------------------------------------------------

RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{4}\b")


def ok(run: StepRun) -> StepRun:
    assert run.returncode == 0, f"{run.name} exited {run.returncode}:\n{run.tail()}"
    return run


def run_id(run: StepRun) -> str:
    found = RUN_ID.findall(run.output)
    assert found, f"{run.name} printed no run id (like 20261123T143000Z-ab12):\n{run.tail()}"
    return found[-1]


def host_line(output: str, host: str, pattern: str) -> bool:
    """A line of ``output`` naming ``host`` (whole word) that also matches ``pattern``."""
    word = re.compile(rf"(?<![\w-]){re.escape(host)}(?![\w-])")
    return any(word.search(line) and re.search(pattern, line) for line in output.splitlines())
