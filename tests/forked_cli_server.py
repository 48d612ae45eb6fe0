"""The server of tests/forked_cli.py: run as a script in a run's folder and environment, it
starts as ansible-playbook does and forks a child per request line that calls the tool's
``main()``; see tests/forked_cli.py for what differs from a new process and why.

It imports nothing of the tests (its path is not on sys.path): only the standard library and
the toolchain's Ansible.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
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


def warming() -> bool:
    return os.environ.get("CLOUDTPU_FORKED_CLI_WARM", "1") != "0"


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
                warm.learn(request["report"])
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
    """What a server loads once for the runs it forks, from its second run on (see
    tests/forked_cli.py): the plugins every run loads, the collection modules its runs imported,
    and the files its runs parsed more than once (playbooks, task and vars files). A module that
    fails to import, or a file that fails to parse, is left for the runs, as they would have."""

    def __init__(self) -> None:
        _keep_parsed_files()
        self.runs = 0
        self.modules: set[str] = set()
        self.tried: set[str] = set()
        self.files: dict[tuple[str, bool, bool], int] = {}
        self.left: set[tuple[str, bool, bool]] = set()

    def learn(self, path: str) -> None:
        """Takes in what a run that ended loaded (its report, which _child writes)."""
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        modules = report.get("modules", ())
        self.modules.update(name for name in modules if name.startswith("ansible_collections."))
        for key in report.get("files", ()):
            key = (str(key[0]), bool(key[1]), bool(key[2]))
            self.files[key] = self.files.get(key, 0) + 1

    def before_run(self) -> None:
        import importlib

        self.runs += 1
        if self.runs < 2:
            return
        if self.runs == 2:
            _load_plugins()
        for name in sorted(self.modules - self.tried):
            self.tried.add(name)
            with contextlib.suppress(Exception):  # a run imports it as it would have
                importlib.import_module(name)
        for key, runs in self.files.items():
            # a file only one run read (its own -e @file, say) is not kept
            if runs > 1 and key not in self.left and not _parse(key):
                self.left.add(key)


# What the server parsed for its runs: (file, json_only, the text's tags, the text's digest) ->
# the parsed data; what a run parsed (file, json_only, trusted as template), for its report;
# and the kept parses a run took.
_PARSED: dict[tuple, object] = {}
_LOADED: set[tuple[str, bool, bool]] = set()
_TAKEN: set[tuple] = set()
_SERVING = [True]  # False in a run


def _parse(key: tuple[str, bool, bool]) -> bool:
    """Reads and parses a file as a run's DataLoader.load_from_file does (the server's load()
    keeps the result under the text's digest). A file that fails here, or whose parse warns
    (a duplicate key, say), is not kept: the runs parse it and say so, as they would have.
    Returns whether it is kept."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.utils.display import Display

    before, said = set(_PARSED), []
    saved = Display.warning, Display.deprecated
    Display.warning = Display.deprecated = lambda *args, **kwargs: said.append(args)
    try:
        DataLoader().load_from_file(
            key[0], cache="none", unsafe=True, json_only=key[1], trusted_as_template=key[2]
        )
    except Exception:  # noqa: BLE001 - the runs read it and say what is wrong
        said.append(key)
    finally:
        Display.warning, Display.deprecated = saved
    for new in set(_PARSED) - before if said else ():
        del _PARSED[new]
    return not said


def _keep_parsed_files() -> None:
    """Wraps DataLoader.load, the parse of every file Ansible reads. In the server it keeps what
    it parses; in a run it notes each file parsed and, the first time in the run that a file's
    text is one the server parsed (the same file, text and tags: where it came from, whether
    it is trusted as a template), returns the server's parse:
    the run's own copy, as the run is a fork, which nothing else in the run holds. Any other
    parse is the run's own."""
    import hashlib

    from ansible._internal._datatag._tags import TrustedAsTemplate
    from ansible.module_utils._internal._datatag import AnsibleTagHelper
    from ansible.parsing.dataloader import DataLoader

    parse = DataLoader.load

    def load(self, data, file_name=None, show_content=True, json_only=False):
        if file_name is None or not isinstance(data, str):
            return parse(self, data, file_name, show_content, json_only)
        digest = hashlib.sha256(data.encode("utf-8", "surrogatepass")).digest()
        key = (str(file_name), bool(json_only), AnsibleTagHelper.tags(data), digest)
        if _SERVING[0]:
            if key not in _PARSED:
                _PARSED[key] = parse(self, data, file_name, show_content, json_only)
            return _PARSED[key]
        _LOADED.add((key[0], key[1], TrustedAsTemplate.is_tagged_on(data)))
        if key in _PARSED and key not in _TAKEN:
            _TAKEN.add(key)  # once per run: a second parse of the same text is the run's own
            return _PARSED[key]
        return parse(self, data, file_name, show_content, json_only)

    DataLoader.load = load


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
        _SERVING[0] = False  # what this run parses is its own (_keep_parsed_files)
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
            report = {"modules": sorted(set(sys.modules) - before), "files": sorted(_LOADED)}
            Path(request["report"]).write_text(json.dumps(report), encoding="utf-8")
        finally:
            os._exit(code)


if __name__ == "__main__":
    _serve()
