"""The worker after cloudtpu.pod.python (pip installer, venv outside home) and
cloudtpu.pod.framework with torch_xla[tpu] 2.9.0.

Runs in a Debian 12 container without TPU devices: torch_xla must import and, with PJRT's CPU
device, give one XLA device (CPU fallback); PJRT_DEVICE=TPU is what the venv's processes get. A
real TPU cannot be reached from here.
"""

from __future__ import annotations

import json
import shlex

import pytest

USER = "tpu"
VENV = "/opt/venvs/torch"
PY = f"{VENV}/bin/python"
TORCH_XLA = "2.9.0"


def as_user(host, command: str):
    return host.run(f"runuser -u {USER} -- sh -c {shlex.quote(command)}")


@pytest.mark.parametrize(
    "path",
    [VENV, f"{VENV}/bin", f"{VENV}/bin/pip", f"{VENV}/lib/python3.11/site-packages/torch_xla"],
)
def test_venv_belongs_to_the_login_user(host, path):
    f = host.file(path)
    assert f.exists, f"{path} is missing"
    assert f.user == USER, f"{path} is owned by {f.user}:{f.group}"


@pytest.mark.parametrize(
    ("dist", "prefix"),
    [("torch_xla", TORCH_XLA), ("torch", "2.9."), ("libtpu", "")],
)
def test_installed_versions(host, dist, prefix):
    out = as_user(host, f"{PY} -c 'import importlib.metadata as m; print(m.version(\"{dist}\"))'")
    assert out.rc == 0, f"{dist} is not installed: {out.stderr}"
    assert out.stdout.strip().startswith(prefix), f"{dist} {out.stdout.strip()}, want {prefix}*"


def test_uv_is_not_installed_with_the_pip_installer(host):
    assert not host.file("/usr/local/bin/uv").exists


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (f"{VENV}/bin/activate", "export PJRT_DEVICE=TPU"),
        (f"{VENV}/framework.env", "PJRT_DEVICE=TPU"),
    ],
)
def test_pjrt_device_is_set_for_the_venv(host, path, needle):
    content = host.file(path).content_string
    assert needle in content, f"{path} lacks {needle!r}:\n{content[-1500:]}"


def test_activated_shell_gets_pjrt_device(host):
    out = as_user(host, f". {VENV}/bin/activate && echo PJRT_DEVICE=$PJRT_DEVICE")
    assert "PJRT_DEVICE=TPU" in out.stdout, out.stdout + out.stderr


def test_check_reports_cpu_fallback(host):
    out = as_user(
        host,
        f"{VENV}/bin/cloudtpu-framework-check --framework torch_xla --device-glob '/dev/accel*'",
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report: rc {out.rc}\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}"
    report = json.loads(lines[-1])
    assert out.rc == 0 and report["mode"] == "CPU fallback", report
    assert report["env"].get("PJRT_DEVICE") == "CPU", report
    assert report["devices"] and report["version"] == TORCH_XLA, report
