"""tpu-unlock from the libtpu role's files, for its tests: the package, the program, a fake pod.

The role installs the package roles/libtpu/files/tpu_unlock/ in /usr/local/lib/cloudtpu/ and the
entry script roles/libtpu/files/tpu-unlock as /usr/local/bin/tpu-unlock. Here the package is
imported from the role's files, and ``PROGRAM`` runs the entry script itself, as the workers do
(``python3 -I``), with its library folder pointed at the role's files instead.

``Pod`` is a fake TPU host in a temporary folder: every test points the tool at its own device
files, lock files and log folder, so nothing outside the test's folder is touched. The
processes holding a "device" are real children of the test; the tool finds them through the
real /proc.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

FILES = Path(__file__).resolve().parents[1] / "roles" / "libtpu" / "files"
TOOL = FILES / "tpu-unlock"
PACKAGE = FILES / "tpu_unlock"
# Where the role installs the package, as the entry script names it.
INSTALLED_LIB = "/usr/local/lib/cloudtpu"

HOLD = """
import signal, sys, time
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
handle = open(sys.argv[1], "rb")
print("holding", flush=True)
time.sleep(120)
"""


def load_package() -> ModuleType:
    """The package tpu_unlock from the role's files (no bytecode written next to them)."""
    spec = importlib.util.spec_from_file_location(
        "tpu_unlock", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tpu_unlock"] = module  # its modules and dataclasses look it up there
    written = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
        for name in ("holders", "lockfolder", "cli"):
            importlib.import_module(f"tpu_unlock.{name}")
    finally:
        sys.dont_write_bytecode = written
    return module


def program() -> list[str]:
    """The command line that runs the entry script as the workers do (-I), its library the
    role's files: the script's text with its one library path replaced, given to python -c."""
    text = TOOL.read_text(encoding="utf-8")
    installed = f'"{INSTALLED_LIB}"'
    assert text.count(installed) == 1, f"{TOOL} names its library folder once: {installed}"
    return [sys.executable, "-I", "-B", "-c", text.replace(installed, repr(str(FILES)))]


tpu_unlock = load_package()
holders = sys.modules["tpu_unlock.holders"]
lockfolder = sys.modules["tpu_unlock.lockfolder"]
cli = sys.modules["tpu_unlock.cli"]
PROGRAM = program()


class Pod:
    """A fake TPU host in a temporary folder: device files, lock files, a log folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "dev").mkdir()
        self.devices = [root / "dev" / "accel0", root / "dev" / "accel1"]
        for device in self.devices:
            device.write_bytes(b"")
        self.locks = [root / "libtpu_lockfile", root / "libtpu.so_lockfile"]
        self.log_dir = root / "tpu_logs"
        self.children: list[subprocess.Popen[str]] = []

    def stale(self) -> None:
        """What a crashed libtpu program leaves behind."""
        self.locks[0].write_text("")
        self.log_dir.mkdir(exist_ok=True)
        (self.log_dir / "tpu_driver.INFO").write_text("log\n")

    def args(self, *extra: str) -> list[str]:
        dev = self.root / "dev"
        args = ["--dev-root", str(dev), "--device-glob", str(dev / "accel*")]
        args += ["--log-dir", str(self.log_dir)]
        args += ["--tmp-dir", str(self.root)]
        for lock in self.locks:
            args += ["--lock", str(lock)]
        return [*args, *extra]

    def hold(
        self, path: Path | None = None, *, ignore_term: bool = False, user: str | None = None
    ) -> subprocess.Popen[str]:
        """Start a real process that keeps `path` (default: the first device) open.

        A process of another user is `sleep`, given the file opened here as an inherited
        descriptor: that user needs no access to the test's folder or to this Python.
        """
        target = path or self.devices[0]
        mode = "ignore-term" if ignore_term else "-"
        if user is None:
            argv = [sys.executable, "-c", HOLD, str(target), mode]
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        else:
            fd = os.open(target, os.O_RDONLY)
            try:
                child = subprocess.Popen(["sleep", "120"], user=user, pass_fds=[fd], cwd="/")
            finally:
                os.close(fd)
            self.children.append(child)
            return child
        self.children.append(child)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "holding", "the holder did not start"
        return child

    def run(self, *extra: str) -> subprocess.CompletedProcess[str]:
        """Run the tool as a program, as the role and people do."""
        return subprocess.run(
            [*PROGRAM, *self.args(*extra)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def run_json(self, *extra: str) -> tuple[int, dict]:
        result = self.run("--json", *extra)
        assert result.stdout.strip(), f"no JSON on stdout; stderr: {result.stderr}"
        return result.returncode, json.loads(result.stdout)

    def cleanup(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=10)
