"""The worker after cloudtpu.pod.python and cloudtpu.pod.framework (jax[tpu] latest, uv).

Python is CLOUDTPU_TEST_PYTHON (default 3.10, the worker image's own apt repository), as in
molecule.yml; on 3.10 'latest' must resolve to the jax 0.6 line, the last one for 3.10.

Runs in a Debian 12 container without TPU devices: jax must import and give CPU devices (CPU
fallback). The TPU path is exercised with a stand-in device file, which the check must refuse
because jax then sees no TPU. A real TPU cannot be reached from here.
"""

from __future__ import annotations

import json
import os
import shlex

import pytest

USER = "tpu"
HOME = f"/home/{USER}"
PYTHON = os.environ.get("CLOUDTPU_TEST_PYTHON") or "3.10"
VENV = f"{HOME}/.venv{PYTHON.replace('.', '')}"
PY = f"{VENV}/bin/python"
CHECK = f"{VENV}/bin/cloudtpu-framework-check"
# The newest jax line a Python can have, where it is not the current one.
JAX_LINE = {"3.10": "0.6."}.get(PYTHON, "")
UV_VERSION = "0.13.8"


def as_user(host, command: str):
    """Run a command as the login user, the way a login shell would."""
    return host.run(f"runuser -u {USER} -- sh -c {shlex.quote(command)}")


def last_json(text: str) -> dict:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert lines, f"no JSON report in output:\n{text}"
    return json.loads(lines[-1])


@pytest.mark.parametrize(
    "path",
    [VENV, f"{VENV}/bin", f"{VENV}/lib/python{PYTHON}/site-packages/jax", f"{VENV}/pyvenv.cfg"],
)
def test_venv_belongs_to_the_login_user(host, path):
    f = host.file(path)
    assert f.exists, f"{path} is missing"
    assert (f.user, f.group) == (USER, USER), f"{path} is owned by {f.user}:{f.group}"


def test_venv_runs_the_wanted_python(host):
    cfg = host.file(f"{VENV}/pyvenv.cfg").content_string
    out = host.check_output(f"{PY} -c 'import sys; print(sys.version_info[:2])'")
    assert out == str(tuple(int(x) for x in PYTHON.split("."))), f"venv python is {out}:\n{cfg}"


def installed(host, dist: str) -> str:
    cmd = as_user(host, f"{PY} -c 'import importlib.metadata as m; print(m.version(\"{dist}\"))'")
    assert cmd.rc == 0, f"{dist} is not installed: {cmd.stderr}"
    return cmd.stdout.strip()


@pytest.mark.parametrize("dist", ["jax", "jaxlib", "opt_einsum"])
def test_installed_versions(host, dist):
    version = installed(host, dist)
    if dist != "opt_einsum" and JAX_LINE:
        assert version.startswith(JAX_LINE), f"{dist} {version} on Python {PYTHON}"


def test_jaxlib_matches_jax(host):
    assert installed(host, "jaxlib") == installed(host, "jax")


def test_libtpu_matches_what_jax_tpu_pins(host):
    """jax[tpu]'s own metadata names its libtpu; the installed one must satisfy it."""
    script = (
        "import importlib.metadata as m, re\n"
        "reqs = [r for r in m.requires('jax') if r.startswith('libtpu') and 'tpu' in r]\n"
        "print(reqs[0].split(';')[0].strip()); print(m.version('libtpu'))\n"
    )
    out = as_user(host, f"{PY} -c {shlex.quote(script)}")
    assert out.rc == 0, out.stderr
    pin, installed = out.stdout.split()
    prefix = pin.split("==")[1].rstrip("*").rstrip(".")
    assert installed.startswith(prefix), f"jax[tpu] pins {pin}, installed libtpu {installed}"


def test_jax_imports_and_sees_cpu_devices(host):
    script = "import jax; d = jax.devices(); print([x.platform for x in d]); print(len(d))"
    out = as_user(host, f". {VENV}/bin/activate && python -c {shlex.quote(script)}")
    assert out.rc == 0, f"import failed:\n{out.stderr[-2000:]}"
    platforms, count = out.stdout.strip().splitlines()[-2:]
    assert platforms.count("'cpu'") >= 1 and "tpu" not in platforms, out.stdout
    # XLA_FLAGS from tpu_framework_env asks for two host devices: the activate block exported it.
    assert count == "2", f"expected 2 CPU devices from XLA_FLAGS, got {count}:\n{out.stdout}"


def test_check_reports_cpu_fallback(host):
    out = as_user(host, f"{CHECK} --framework jax --device-glob '/dev/accel*'")
    report = last_json(out.stdout)
    assert out.rc == 0, f"rc {out.rc}: {report}\n{out.stderr[-1500:]}"
    assert report["mode"] == "CPU fallback", report
    assert report["version"] == installed(host, "jax"), report


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ("--require-tpu true --device-glob '/dev/accel*'", "no device file matches"),
        ("--require-tpu auto --device-glob '/tmp/fake-tpu/accel*'", "TPU device files exist"),
    ],
    ids=["require-true-without-devices", "device-file-but-no-tpu"],
)
def test_check_refuses_when_a_tpu_is_required_but_unseen(host, args, reason):
    host.run("install -d -m 0755 /tmp/fake-tpu && touch /tmp/fake-tpu/accel0")
    out = as_user(host, f"{CHECK} --framework jax {args}")
    report = last_json(out.stdout)
    assert out.rc == 1, f"rc {out.rc}, expected 1: {report}"
    assert reason in report["reason"], report


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (f"{HOME}/.bashrc", f"{VENV}/bin/activate"),
        (f"{VENV}/bin/activate", "export XLA_FLAGS=--xla_force_host_platform_device_count=2"),
        (f"{VENV}/framework.env", "XLA_FLAGS=--xla_force_host_platform_device_count=2"),
    ],
)
def test_managed_blocks_and_env_file(host, path, needle):
    content = host.file(path).content_string
    assert needle in content, f"{path} lacks {needle!r}:\n{content[-1500:]}"


def test_login_shell_activates_the_venv(host):
    inner = "bash -ic 'echo VENV=$VIRTUAL_ENV'"
    out = host.run(f"su - {USER} -c {shlex.quote(inner)}")
    assert f"VENV={VENV}" in out.stdout, f"rc {out.rc}: {out.stdout}\n{out.stderr}"


@pytest.mark.parametrize("path", ["/opt/cloudtpu/uv/bin/uv", "/usr/local/bin/uv"])
def test_uv_is_installed_pinned(host, path):
    out = host.run(f"{path} --version")
    assert out.rc == 0, out.stderr
    assert out.stdout.split()[1] == UV_VERSION, out.stdout


def test_uv_tool_venv_is_root_owned(host):
    f = host.file("/opt/cloudtpu/uv")
    assert (f.user, f.mode & 0o022) == ("root", 0), f"{f.user} {oct(f.mode)}"
