"""Ansible command runs for the tests, forked from a process that has started Ansible already.

A test file that runs many playbooks with one environment and folder (the bad-input tables:
hundreds of runs, each stopping in its first checks) pays, per run, about 0.7 CPU-s for a new
interpreter to import Ansible and read its configuration: more than the run itself. Here a
server process, one per environment and folder, does that start once, as ansible-playbook does
(the same imports, the configuration read from the same environment and folder), and forks a
child per run that calls the tool's ``main()`` with the run's arguments (ansible-playbook,
ansible and ansible-inventory of the toolchain that runs the tests): the same code
from the parsing of the command line on, in a process of its own (its own session, standard
streams and exit code). ``run()`` takes and returns what ``subprocess.run`` does, so a test
reads the same output either way.

What differs from a new ``ansible-playbook`` process, and why the tests that use this do not
depend on it:
- The configuration is read once per server, so a server serves one environment and one
  folder only (its key is both, whole): a run never sees another environment's settings.
- Ansible's local temporary folder (``ansible-local-*``) is the server's, shared by its runs
  and removed when the server stops (each file's last test stops its servers: tests/conftest.py),
  where a new process makes one of its own; what a run puts there is its own (named per task).
- Python's hash seed is the server's: a set's order (ansible_run_tags, say) is the same in
  every run of one server, where each new process draws its own.
- The process is a fork, not an exec: ``sys.argv[0]`` is ansible-playbook's path as usual, but
  the process tree has the server between the test and the run.
- From its second run on, a server also holds what its runs load after their start
  (tests/forked_cli_server.py): the plugins every run loads (connection, shell, become and
  callback plugins, the enabled inventory and cache plugins, the linear strategy, their
  documented options read once), the collection modules (filters, module_utils, actions) its
  earlier runs imported, and the files more than one of them parsed (playbooks, task and vars
  files). A run finds these loaded, as in one process that ran several playbooks one after
  another; a kept file is used only while its bytes are those parsed, once per run. The
  collection finder is the server's, configured from the same environment and folder (these
  tools have no option that changes it). ``CLOUDTPU_FORKED_CLI_WARM=0`` turns this off.
A test that signals a run passes ``on_start``, which gets the run's process id (ansible-playbook's
main() in a session of its own, as a new process would be): the signal reaches the same code.
Tests that look at its processes, signal its process group, or type the README's commands (the
journeys) run it the usual way. ``CLOUDTPU_FORKED_CLI=0`` makes ``run()`` start a new process
for every run, to compare.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from tests.forked_cli_server import CLIS

BIN = Path(sys.executable).parent
PLAYBOOK = BIN / "ansible-playbook"
SERVER = Path(__file__).with_name("forked_cli_server.py")
# Servers kept, the most recently used last: a file whose tests each give another environment
# (a temporary folder of their own, say) keeps only the newest few, not one per test.
_SERVERS: OrderedDict[tuple, _Server] = OrderedDict()
_CLOSING: list[threading.Thread] = []
_LOCK = threading.Lock()
KEEP = 3


def enabled() -> bool:
    return os.environ.get("CLOUDTPU_FORKED_CLI", "1") != "0"


def run(
    cmd: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
    on_start: Callable[[int], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True, check=False, ...)``, forked from a
    server when ``cmd`` is one of this toolchain's CLIS; raises subprocess.TimeoutExpired
    after killing the run's session, as subprocess.run kills its process. ``on_start`` is
    called with the run's process id once it has started."""
    argv = [str(part) for part in cmd]
    forked = Path(argv[0]).parent == BIN and Path(argv[0]).name in CLIS and enabled()
    if not forked and on_start is None:
        return subprocess.run(
            argv, cwd=cwd, env=env, timeout=timeout, input=input,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if not forked:
        with subprocess.Popen(
            argv, cwd=cwd, env=env, text=True, start_new_session=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ) as proc:  # fmt: skip
            if on_start is not None:
                on_start(proc.pid)
            try:
                out, err = proc.communicate(input, timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                out, err = proc.communicate()
                raise subprocess.TimeoutExpired(argv, timeout or 0, out, err) from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)
    folder = str(Path(cwd or os.getcwd()).resolve())
    environment = dict(os.environ if env is None else env)
    key = (folder, tuple(sorted(environment.items())))
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None or not server.alive():
            server = _SERVERS[key] = _Server(folder, environment)
        _SERVERS.move_to_end(key)
        old = [_SERVERS.pop(k) for k in list(_SERVERS)[: max(0, len(_SERVERS) - KEEP)]]
    for stale in old:  # stopped beside this run: each waits for its runs (other threads') to end
        closing = threading.Thread(target=stale.close, daemon=True)
        closing.start()
        _CLOSING.append(closing)
    return server.run(argv, input, timeout, on_start)


def close_all() -> None:
    """Stop every server (each waits for its runs to end): its temporary folder goes with it."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
        closing = list(_CLOSING)
        _CLOSING.clear()
    for server in servers:
        server.close()
    for thread in closing:
        thread.join()


class _Server:
    """One server process and the runs waiting for its replies."""

    def __init__(self, folder: str, env: dict[str, str]) -> None:
        self.files = tempfile.TemporaryDirectory(prefix="cloudtpu-forked-cli-")
        self.log = Path(self.files.name) / "server.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [_interpreter(), str(SERVER)], cwd=folder, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            )  # fmt: skip
        self.lock = threading.Lock()
        self.number = 0
        self.waiting: dict[int, queue.Queue] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self.lock:
                box = self.waiting.get(reply["id"])
            if box is not None:
                box.put(reply)
        with self.lock:  # the server is gone: every run still waiting learns it
            boxes = list(self.waiting.values())
        for box in boxes:
            box.put({"gone": True})

    def run(
        self,
        argv: list[str],
        text: str | None,
        timeout: float | None,
        on_start: Callable[[int], None] | None = None,
    ):
        with self.lock:
            self.number += 1
            number = self.number
            box: queue.Queue = queue.Queue()
            self.waiting[number] = box
        base = Path(self.files.name) / f"run{number}"
        stdin = None
        if text is not None:
            stdin = f"{base}.in"
            Path(stdin).write_text(text, encoding="utf-8")
        request = {"id": number, "argv": argv, "stdin": stdin}
        request.update(stdout=f"{base}.out", stderr=f"{base}.err", report=f"{base}.report")
        try:
            with self.lock:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps(request).encode() + b"\n")
                self.proc.stdin.flush()
            started = box.get(timeout=120)
            if started.get("gone"):
                raise RuntimeError(f"the forked-cli server stopped:\n{self.log.read_text()}")
            if on_start is not None:
                on_start(started["pid"])
            try:
                ended = box.get(timeout=timeout)
            except queue.Empty:
                os.killpg(started["pid"], 9)
                box.get(timeout=60)
                out, err = _read(request)
                raise subprocess.TimeoutExpired(
                    argv, timeout or 0, output=out, stderr=err
                ) from None
            if ended.get("gone"):
                raise RuntimeError(f"the forked-cli server stopped:\n{self.log.read_text()}")
            out, err = _read(request)
            return subprocess.CompletedProcess(argv, ended["rc"], out, err)
        finally:
            with self.lock:
                self.waiting.pop(number, None)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.files.cleanup()


def _interpreter() -> str:
    """The Python of ansible-playbook's first line (its ansible_playbook_python)."""
    first = PLAYBOOK.read_text(encoding="utf-8").split("\n", 1)[0]
    return first[2:].strip() if first.startswith("#!") else sys.executable


def _read(request: dict) -> tuple[str, str]:
    texts = []
    for name in ("stdout", "stderr"):
        path = Path(request[name])
        texts.append(path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")
        path.unlink(missing_ok=True)
    Path(request["report"]).unlink(missing_ok=True)
    if request["stdin"]:
        Path(request["stdin"]).unlink(missing_ok=True)
    return texts[0], texts[1]
