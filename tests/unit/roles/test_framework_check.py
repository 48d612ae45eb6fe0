"""cloudtpu-framework-check (roles/framework/files/framework_check.py): the verdict table.

Exercised: device-file globbing and the TPU / CPU fallback / refusal verdicts for every
tpu_framework_require_tpu value, with the framework's answer given as data. The real imports
(jax, torch_xla) run in the molecule scenarios; a real TPU is not reachable from here.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "roles" / "framework" / "files" / "framework_check.py"
_spec = importlib.util.spec_from_file_location("framework_check", SCRIPT)
assert _spec and _spec.loader
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

GLOBS = ["/dev/accel*", "/dev/vfio/[0-9]*"]


@pytest.mark.parametrize(
    ("require", "files", "platforms", "ok", "mode", "words"),
    [
        ("auto", [], ["cpu"], True, "CPU fallback", ["no TPU device file matches /dev/accel*"]),
        ("auto", ["/dev/accel0"], ["tpu"] * 4, True, "TPU", ["jax sees tpu devices"]),
        ("auto", ["/dev/accel0"], ["cpu"], False, "no TPU", ["TPU device files exist", "hold"]),
        ("auto", ["/dev/vfio/0"], [], False, "no TPU", ["jax sees no devices"]),
        ("true", [], ["cpu"], False, "no TPU", ["require_tpu is true", "/dev/vfio/[0-9]*"]),
        ("true", ["/dev/accel0"], ["tpu"], True, "TPU", []),
        ("true", ["/dev/accel0"], ["cpu"], False, "no TPU", ["TPU device files exist"]),
        ("false", ["/dev/accel0"], ["cpu"], True, "CPU fallback", ["require_tpu is false"]),
        ("false", [], ["cpu"], True, "CPU fallback", []),
        ("false", ["/dev/accel0"], ["TPU"], True, "TPU", []),
    ],
)
def test_verdict(require, files, platforms, ok, mode, words):
    got_ok, got_mode, reason = check.verdict("jax", require, files, platforms, GLOBS)
    assert (got_ok, got_mode) == (ok, mode), reason
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"


def test_device_files_matches_globs_and_dedupes(tmp_path):
    (tmp_path / "accel0").touch()
    (tmp_path / "accel1").touch()
    (tmp_path / "vfio").mkdir()
    (tmp_path / "vfio" / "0").touch()
    (tmp_path / "vfio" / "vfio").touch()  # the VFIO control file is not a TPU
    patterns = [f"{tmp_path}/accel*", f"{tmp_path}/accel0", f"{tmp_path}/vfio/[0-9]*"]
    assert check.device_files(patterns) == [
        f"{tmp_path}/accel0",
        f"{tmp_path}/accel1",
        f"{tmp_path}/vfio/0",
    ]


def test_main_reports_an_import_failure_as_json(monkeypatch, capsys):
    def broken() -> dict:
        raise ImportError("No module named 'jax'")

    monkeypatch.setitem(check.PROBES, "jax", broken)
    rc = check.main(["--framework", "jax", "--device-glob", "/nonexistent/accel*"])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert rc == 2, report
    assert report["mode"] == "import failed" and "No module named 'jax'" in report["reason"]


def test_main_reports_cpu_fallback(monkeypatch, capsys):
    monkeypatch.setitem(
        check.PROBES,
        "jax",
        lambda: {"version": "0.0", "devices": ["cpu:0"], "platforms": ["cpu"]},
    )
    rc = check.main(["--framework", "jax", "--device-glob", "/nonexistent/accel*"])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (rc, report["ok"], report["mode"]) == (0, True, "CPU fallback"), report


def test_torch_xla_falls_back_to_pjrt_cpu_without_devices(monkeypatch, capsys):
    monkeypatch.setenv("PJRT_DEVICE", "TPU")
    seen = {}

    def probe() -> dict:
        import os

        seen["PJRT_DEVICE"] = os.environ["PJRT_DEVICE"]
        return {"version": "0.0", "devices": ["xla:0"], "platforms": ["CPU"]}

    monkeypatch.setitem(check.PROBES, "torch_xla", probe)
    rc = check.main(["--framework", "torch_xla", "--device-glob", "/nonexistent/accel*"])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert seen["PJRT_DEVICE"] == "CPU", seen
    assert rc == 0 and report["mode"] == "CPU fallback", report


def test_device_root_points_dev_globs_at_a_test_folder(tmp_path, monkeypatch):
    (tmp_path / "accel0").touch()
    monkeypatch.setenv("CLOUDTPU_DEVICE_ROOT", str(tmp_path))
    assert check.device_files(["/dev/accel*", "/dev/vfio/[0-9]*"]) == [f"{tmp_path}/accel0"]
