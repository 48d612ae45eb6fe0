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
- From its second run on, a server also holds what runs load after their start: it loads the
  plugins every run loads (connection, shell, become and callback plugins, the enabled inventory
  and cache plugins, the linear strategy; their documented options read once), and imports the
  collection modules (filters, module_utils, actions) that its earlier runs imported, so a run
  finds them loaded, as in one process that ran several playbooks one after another. Its
  collection finder is then the server's, configured from the same environment and folder (these
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

BIN = Path(sys.executable).parent
PLAYBOOK = BIN / "ansible-playbook"
# Modules every playbook run imports after its start, imported by the server once.
PRELOADED = (
    "ansible.executor.playbook_executor",
    "ansible.executor.task_executor",
    "ansible.plugins.strategy.linear",
)
# The command-line tools a server runs, by the module of their main().
CLIS = {
    "ansible-playbook": "ansible.cli.playbook",
    "ansible": "ansible.cli.adhoc",
    "ansible-inventory": "ansible.cli.inventory",
}
# Servers kept, the most recently used last: a file whose tests each give another environment
# (a temporary folder of their own, say) keeps only the newest few, not one per test.
_SERVERS: OrderedDict[tuple, _Server] = OrderedDict()
_CLOSING: list[threading.Thread] = []
_LOCK = threading.Lock()
KEEP = 3


def enabled() -> bool:
    return os.environ.get("CLOUDTPU_FORKED_CLI", "1") != "0"


def warming() -> bool:
    return os.environ.get("CLOUDTPU_FORKED_CLI_WARM", "1") != "0"


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
                [_interpreter(), __file__], cwd=folder, env=env,
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
        request.update(stdout=f"{base}.out", stderr=f"{base}.err", modules=f"{base}.modules")
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
    Path(request["modules"]).unlink(missing_ok=True)
    if request["stdin"]:
        Path(request["stdin"]).unlink(missing_ok=True)
    return texts[0], texts[1]


# -- the server (run as a script by _Server, in the run's folder and environment) -------------


def _serve() -> None:
    """Start as ansible-playbook does, then fork a run per request line; reply with each run's
    process id when it starts and its exit code when it ends; stop at the end of the requests
    once every run has ended."""
    import select
    import signal

    # As in ansible-playbook: its own folder first on the path, not this one.
    sys.path[0] = str(BIN)
    # The start every run makes (what ansible-playbook imports before it parses its arguments:
    # this reads Ansible's configuration from the environment and the folder).
    import importlib

    for name in (*CLIS.values(), *PRELOADED):
        importlib.import_module(name)
    warm = _Warm() if warming() else None

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    runs: dict[int, dict] = {}
    pending = b""
    ended = False

    def reply(message: dict) -> None:
        os.write(1, json.dumps(message).encode() + b"\n")

    while runs or not ended:
        ready = select.select([wake_read] if ended else [0, wake_read], [], [])[0]
        if wake_read in ready:
            os.read(wake_read, 4096)
        while runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            request = runs.pop(pid)
            if warm is not None:
                warm.learn(request["modules"])
            reply({"id": request["id"], "rc": os.waitstatus_to_exitcode(status)})
        if 0 in ready:
            data = os.read(0, 65536)
            ended = not data
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                if warm is not None:
                    warm.before_run()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(request, (wake_read, wake_write))
                runs[pid] = request
                reply({"id": request["id"], "pid": pid})


class _Warm:
    """What a server loads once for the runs it forks, from its second run on (see the
    module's docstring): the plugins every run loads, and the collection modules its runs
    imported. A module that fails to import here is left for the runs to import, as they would."""

    def __init__(self) -> None:
        self.runs = 0
        self.learned: set[str] = set()
        self.tried: set[str] = set()

    def learn(self, path: str) -> None:
        """Takes in the collection modules a run that ended imported (its modules file)."""
        try:
            names = Path(path).read_text(encoding="utf-8").split()
        except OSError:
            return
        self.learned.update(name for name in names if name.startswith("ansible_collections."))

    def before_run(self) -> None:
        import contextlib
        import importlib

        self.runs += 1
        if self.runs < 2:
            return
        if self.runs == 2:
            _load_plugins()
        for name in sorted(self.learned - self.tried):
            self.tried.add(name)
            with contextlib.suppress(Exception):  # a run loads it as it would have
                importlib.import_module(name)


def _load_plugins() -> None:
    """Loads what every run loads once its collection finder is set up: the plugins (and their
    documented options) of the kinds a playbook run loads whole or by configuration."""
    from ansible import constants as C
    from ansible.plugins import loader

    loader.init_plugin_loader()
    for kind in (
        loader.connection_loader, loader.shell_loader, loader.become_loader, loader.callback_loader
    ):  # fmt: skip
        list(kind.all(class_only=True))
    for name in C.CALLBACKS_ENABLED or ():
        loader.callback_loader.get(name, class_only=True)
    for name in C.INVENTORY_ENABLED:
        loader.inventory_loader.get(name, class_only=True)
    loader.cache_loader.get(C.CACHE_PLUGIN, class_only=True)
    loader.strategy_loader.get("linear", class_only=True)


def _child(request: dict, server_fds: tuple[int, int]) -> None:
    """One run: the tool's main() with the request's arguments and standard streams."""
    import atexit
    import importlib
    import random
    import signal
    import traceback
    import warnings

    code = 250
    before = set(sys.modules)
    try:
        os.setsid()  # a session of its own, as the process subprocess.run would have started
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in server_fds:
            os.close(fd)
        # The server's exit handlers (removing its temporary folder) are not this run's.
        atexit._clear()
        random.seed()
        streams = (
            os.open(request["stdin"] or os.devnull, os.O_RDONLY),
            os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        )
        for number, fd in enumerate(streams):
            os.dup2(fd, number)
            os.close(fd)
        # The server's collection finder (_load_plugins) is this run's: not a second one.
        warnings.filterwarnings("ignore", "AnsibleCollectionFinder has already been configured")
        sys.argv = list(request["argv"])
        main = importlib.import_module(CLIS[Path(sys.argv[0]).name]).main
        try:
            main(sys.argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()  # whatever it is, the run's stderr says it
        raise
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            loaded = sorted(set(sys.modules) - before)
            Path(request["modules"]).write_text("\n".join(loaded), encoding="utf-8")
        finally:
            os._exit(code)


if __name__ == "__main__":
    _serve()
