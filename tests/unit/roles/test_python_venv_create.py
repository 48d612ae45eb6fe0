"""The python role's venv creation (roles/python/files/venv_create.py), run for real.

With uv the venv is made without pip and uv installs the wheels ensurepip would have installed;
the venv must end up with the same distributions, in working order, as `python -m venv` gives.
Without uv, or when ensurepip's list cannot be read, it is `python -m venv` itself.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "roles" / "python" / "files" / "venv_create.py"
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")

spec = importlib.util.spec_from_file_location("venv_create", SCRIPT)
venv_create = importlib.util.module_from_spec(spec)
spec.loader.exec_module(venv_create)


def make(venv: Path, clear: str = "", uv: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.read_text(), str(venv), clear, uv],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip()


def dists(venv: Path) -> list[str]:
    site = next(venv.glob("lib/python3*/site-packages"))
    return sorted(p.name for p in site.glob("*.dist-info"))


def pip_version(venv: Path) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.split()[1]


def test_ensurepip_wheels_are_files_of_the_running_python() -> None:
    wheels = venv_create.ensurepip_wheels()
    assert wheels and all(Path(w).is_file() and w.endswith(".whl") for w in wheels)
    assert any(Path(w).name.startswith("pip-") for w in wheels)


@pytest.mark.skipif(UV is None, reason="no uv binary next to the test's Python or on PATH")
def test_uv_gives_what_ensurepip_gives(tmp_path: Path) -> None:
    by_uv, by_venv = tmp_path / "uv", tmp_path / "ensurepip"
    said = make(by_uv, uv=UV)
    assert said.startswith("venv made without pip; uv installed ensurepip's wheels: pip-"), said
    assert make(by_venv) == "venv made with python -m venv (ensurepip)"
    assert dists(by_uv) == dists(by_venv)
    assert pip_version(by_uv) == pip_version(by_venv)
    assert (by_uv / "bin" / "pip").exists() and (by_uv / "bin" / "activate").exists()


@pytest.mark.skipif(UV is None, reason="no uv binary next to the test's Python or on PATH")
def test_clear_empties_a_broken_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    make(venv, uv=UV)
    shutil.rmtree(next(venv.glob("lib/python3*/site-packages")) / "pip")
    (venv / "leftover").write_text("x")
    make(venv, clear="clear", uv=UV)
    assert not (venv / "leftover").exists()
    assert pip_version(venv)


def test_an_unreadable_ensurepip_list_falls_back_to_ensurepip(tmp_path: Path, monkeypatch) -> None:
    import ensurepip

    monkeypatch.setattr(ensurepip, "_get_packages", lambda: {"pip": object()}, raising=False)
    assert venv_create.ensurepip_wheels() == []
