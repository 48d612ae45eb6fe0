"""cloudtpu.pod.framework end to end on the control machine, with a stand-in framework.

Exercised: the whole role (not check mode) against local venvs and a local package index
(file://, so nothing is fetched from the network) that serves a stand-in `jax` wheel: a
package named jax whose devices() answers with the device kind an environment variable asks
for (passed through tpu_framework_env). With both installers (pip and uv): the first install of
a pinned version, a second run that installs nothing, `latest` that stays put while the index
has nothing newer and upgrades once it does. With device files faked through
tpu_framework_device_globs (/dev/accel*, looked for in a test folder named by CLOUDTPU_DEVICE_ROOT
in tpu_framework_env): what a container cannot show, a host with TPU device files where
the framework sees a TPU, one where it does not, a required TPU that is missing, and an import
that hangs (the timeout). Not exercised: a real TPU, libtpu, or the jax[tpu] extra's pins (the
stand-in has no `tpu` extra; molecule/framework installs the real one).
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests import role_runner
from tests.integration.playbook_helpers import LOCAL_PYTHON, error_text
from tests.role_runner import isolated_installer_env, run_role

UV = role_runner.BIN / "uv"

STANDIN = textwrap.dedent(
    """
    import os
    import time

    __version__ = "{version}"


    class Device:
        def __init__(self, platform, index):
            self.platform = platform
            self.index = index

        def __str__(self):
            return f"{{self.platform}}:{{self.index}}"


    def devices():
        kind = os.environ.get("STANDIN_DEVICES", "cpu")
        if kind == "hang":
            time.sleep(600)
        return [Device(kind, i) for i in range(4 if kind == "tpu" else 1)]
    """
)


def build_wheel(folder: Path, version: str, name: str = "jax") -> Path:
    """A pure-Python wheel of the stand-in jax (or an empty package of another name, such as
    tpu-info), with a RECORD that carries real hashes."""
    module = name.replace("-", "_")
    code = STANDIN.format(version=version) if name == "jax" else f'__version__ = "{version}"\n'
    files = {
        f"{module}/__init__.py": code.encode(),
        f"{module}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ),
        f"{module}-{version}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: cloudtpu-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = f"{module}-{version}.dist-info/RECORD"
    lines = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(data)}")
    lines.append(f"{record},,")
    files[record] = ("\n".join(lines) + "\n").encode()
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


def write_index(root: Path, versions: list[str]) -> str:
    """A PEP 503 simple index in ``root`` serving the stand-in jax ``versions``, and a stand-in
    tpu-info (tpu_framework_tpu_info is on by default)."""
    for name, releases in (("jax", versions), ("tpu-info", ["0.0.1"])):
        project = root / name
        project.mkdir(parents=True, exist_ok=True)
        links = []
        for version in releases:
            wheel = build_wheel(project, version, name)
            links.append(f'<a href="{wheel.name}">{wheel.name}</a><br>')
        page = "<html><body>" + "".join(links) + "</body></html>\n"
        (project / "index.html").write_text(page)
    return f"file://{root}/"


class Worker:
    """A venv, a device folder and an index on the control machine, and role runs against them."""

    def __init__(self, root: Path, installer: str) -> None:
        self.root = root
        self.installer = installer
        self.venv = root / "venv"
        self.dev = root / "dev"
        self.dev.mkdir()
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        self.index = write_index(root / "index", ["0.10.1", "0.10.2"])

    def publish(self, version: str) -> None:
        write_index(self.root / "index", [version])

    def device_file(self, present: bool) -> None:
        accel = self.dev / "accel0"
        if present:
            accel.touch()
        elif accel.exists():
            accel.unlink()

    def run(self, devices: str = "cpu", **variables):
        extra = {
            "tpu_framework_name": "jax",
            "tpu_framework_version": "0.10.2",
            "tpu_venv_path": str(self.venv),
            "tpu_login_user": "root",
            # the login contract puts a venv in the login home or /opt: here, the test's folder
            "tpu_login_home": str(self.root),
            "tpu_framework_installer": self.installer,
            "tpu_framework_uv_bin": str(UV),
            "tpu_framework_index_url": self.index,
            "tpu_framework_device_globs": ["/dev/accel*"],
            # the check looks for /dev/accel* in this folder (only TPU globs pass the role)
            "tpu_framework_env": {
                "STANDIN_DEVICES": devices,
                "CLOUDTPU_DEVICE_ROOT": str(self.dev),
            },
            "tpu_framework_check_timeout": 60,
            **variables,
        }
        # Root on the control machine may have no sudo; su from root to root needs no password.
        hostvars = {**LOCAL_PYTHON, "ansible_become_method": "su"}
        # The machine's own pip configuration (extra indexes, find-links) must not answer for
        # the stand-in index: the versions seen are those this test published.
        result = run_role(
            "framework", extra, check=False, hostvars=hostvars, env=isolated_installer_env()
        )
        return result, result.stdout + result.stderr

    def pinned(self) -> str:
        """The stand-in release in the venv, or the first one published: the device checks pin
        it, so that they run no installer and ask the index nothing (the tests above do)."""
        version = self.installed()
        return version if re.fullmatch(r"[0-9]+(\.[0-9]+)+", version) else "0.10.2"

    def installed(self, module: str = "jax") -> str:
        out = subprocess.run(
            [
                str(self.venv / "bin" / "python"),
                "-c",
                f"import {module}; print({module}.__version__)",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout.strip() or out.stderr


def task_status(out: str, task: str) -> str:
    """The first result (ok, changed, skipping, fatal) after a task's header."""
    match = re.search(
        rf"TASK \[cloudtpu\.pod\.framework : {re.escape(task)}\].*?^(ok|changed|skipping|fatal):",
        out,
        re.M | re.S,
    )
    assert match, f"task {task!r} not in the output:\n{out[-3000:]}"
    return match.group(1)


INSTALL = "Install the framework and the requirements into the venv"
# The role's tasks, run only where the worker differs from the role's record (the fast path).
TASKS = "Bring the worker to the role's state where it differs from the record"
DRY_RUN = "Compare the venv with the requirements (installer dry run)"
NEWEST = "Ask the package index for the newest release of the framework"


# The role records what it installed in local facts, and its converged state; these runs must
# not leave either behind.
LOCAL_FACT = Path("/etc/ansible/facts.d/cloudtpu_framework.fact")
RECORD = Path("/var/lib/cloudtpu/state/framework.json")


@pytest.fixture(scope="module", params=["pip", "uv"])
def worker(request, tmp_path_factory):
    if request.param == "uv" and not UV.exists():
        pytest.skip(f"no uv at {UV} (make setup installs it)")
    root = tmp_path_factory.mktemp(f"framework-{request.param}")
    saved = {path: path.read_bytes() if path.exists() else None for path in (LOCAL_FACT, RECORD)}
    yield Worker(root, request.param)
    shutil.rmtree(root, ignore_errors=True)
    for path, content in saved.items():
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(content)


def test_first_run_installs_the_pinned_release(worker):
    result, out = worker.run()
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, INSTALL) == "changed"
    assert worker.installed() == "0.10.2"
    assert worker.installed("tpu_info") == "0.0.1", "tpu-info was not installed with jax"
    assert "jax 0.10.2: CPU fallback" in out, out[-3000:]


def test_second_run_installs_nothing(worker):
    result, out = worker.run()
    assert result.returncode == 0, out[-3000:]
    # The pinned release is in place, as the first run recorded: the role's tasks do not run.
    assert task_status(out, TASKS) == "skipping"
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\b", out), out[-3000:]


def test_pinned_release_with_its_tools_needs_no_dry_run(worker):
    # The tasks run (no fast path): the pinned jax and tpu-info are both in the venv, so the
    # installer is not asked.
    result, out = worker.run(tpu_fast_path=False)
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, DRY_RUN) == "skipping"
    assert task_status(out, INSTALL) == "skipping"

    # tpu-info removed behind the role's back: the pinned jax alone does not do.
    pip = [str(worker.venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", "tpu-info"]
    subprocess.run(pip, check=True, capture_output=True)
    result, out = worker.run(tpu_fast_path=False)
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, DRY_RUN) == "ok"
    assert task_status(out, INSTALL) == "changed"
    assert worker.installed("tpu_info") == "0.0.1"


def test_latest_stays_while_the_index_has_nothing_newer(worker):
    result, out = worker.run(tpu_framework_version="latest")
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, NEWEST) == "ok"
    assert task_status(out, INSTALL) == "skipping"
    assert worker.installed() == "0.10.2"


def test_latest_upgrades_once_the_index_has_a_newer_release(worker):
    worker.publish("0.10.3")
    result, out = worker.run(tpu_framework_version="latest")
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, INSTALL) == "changed"
    assert worker.installed() == "0.10.3"
    assert "jax 0.10.3: CPU fallback" in out, out[-3000:]
    again, out = worker.run(tpu_framework_version="latest")
    assert again.returncode == 0 and task_status(out, TASKS) == "skipping", out[-3000:]


def test_dry_run_compares_extra_requirements_and_installs_nothing(worker):
    result, out = worker.run(
        tpu_framework_version="latest", tpu_framework_extra_requirements=["jax>=0.10"]
    )
    assert result.returncode == 0, out[-3000:]
    assert task_status(out, DRY_RUN) == "ok"
    assert task_status(out, INSTALL) == "skipping"


# The check does not depend on the installer: one is enough for the rest.
ONE_INSTALLER = pytest.mark.parametrize("worker", ["pip"], indirect=True)


@ONE_INSTALLER
def test_tpu_seen_where_device_files_exist(worker):
    worker.device_file(True)
    try:
        result, out = worker.run("tpu", tpu_framework_version=worker.pinned())
    finally:
        worker.device_file(False)
    assert result.returncode == 0, out[-3000:]
    assert re.search(r"jax 0\.10\.\d: TPU;", out) and "tpu:3" in out, out[-3000:]


@ONE_INSTALLER
@pytest.mark.parametrize(
    ("devices", "device_file", "variables", "words"),
    [
        ("cpu", True, {}, ["TPU device files exist", "accel0", "jax sees cpu devices"]),
        ("cpu", False, {"tpu_framework_require_tpu": True}, ["require_tpu is true"]),
        ("hang", False, {"tpu_framework_check_timeout": 3}, ["did not finish", "(3 s)"]),
    ],
    ids=["device-file-but-cpu", "required-but-absent", "hanging-import"],
)
def test_check_fails_saying_why(worker, devices, device_file, variables, words):
    worker.device_file(device_file)
    try:
        result, out = worker.run(devices, tpu_framework_version=worker.pinned(), **variables)
    finally:
        worker.device_file(False)
    error = error_text(out) or out
    assert result.returncode != 0, out[-3000:]
    for word in words:
        assert word in error, f"{word!r} not in:\n{error[-3000:]}"


@ONE_INSTALLER
def test_require_false_accepts_cpu_where_device_files_exist(worker):
    worker.device_file(True)
    try:
        result, out = worker.run(
            "cpu", tpu_framework_version=worker.pinned(), tpu_framework_require_tpu="false"
        )
    finally:
        worker.device_file(False)
    assert result.returncode == 0, out[-3000:]
    assert "CPU fallback" in out, out[-3000:]
