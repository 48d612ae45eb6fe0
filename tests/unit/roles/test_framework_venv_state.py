"""roles/framework/files/venv_state.py: what the framework role's record and state check see of
a venv, run the way cloudtpu.pod.tpu_state runs it (`python -I -B -c <source> <activate>`).

The same venv must print the same line, and exactly what the role's tasks would repair must
change it: its own block in bin/activate, the file's owner or mode, the venv's distributions.
The rest of bin/activate (the tcmalloc role's block, the venv's own lines) must not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "roles/framework/files/venv_state.py"
BLOCK = (
    "# BEGIN cloudtpu.pod framework environment\n"
    "export XLA_FLAGS=--xla_force_host_platform_device_count=2\n"
    "# END cloudtpu.pod framework environment\n"
)
TCMALLOC = "# BEGIN cloudtpu.pod tcmalloc\nLD_PRELOAD=x\n# END cloudtpu.pod tcmalloc\n"


def state(activate: Path) -> tuple[str, dict]:
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", SCRIPT.read_text(), str(activate)],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    return done.stdout, json.loads(done.stdout)


@pytest.fixture
def activate(tmp_path: Path) -> Path:
    path = tmp_path / "activate"
    path.write_text("VIRTUAL_ENV=/venv\nexport VIRTUAL_ENV\n" + BLOCK)
    path.chmod(0o644)
    return path


def test_prints_the_interpreter_the_distributions_and_the_block(activate: Path) -> None:
    _, seen = state(activate)
    assert seen["python"] == sys.version and seen["prefix"] == sys.prefix
    assert seen["ids"] == [os.getuid(), os.getgid()]
    names = {name.lower() for name, _version in seen["distributions"]}
    assert "pytest" in names, names
    info = os.stat(activate)
    assert seen["activate"] == {
        "uid": info.st_uid,
        "gid": info.st_gid,
        "mode": "0o644",
        "block": BLOCK.splitlines(),
    }


def test_the_same_venv_prints_the_same_line(activate: Path) -> None:
    assert state(activate)[0] == state(activate)[0]


@pytest.mark.parametrize(
    "change",
    [
        "the venv's own lines",
        "the tcmalloc role's block",
    ],
)
def test_what_the_role_does_not_manage_does_not_change_it(activate: Path, change: str) -> None:
    before = state(activate)[0]
    text = activate.read_text()
    activate.write_text(
        "# edited by hand\n" + text if change == "the venv's own lines" else text + TCMALLOC
    )
    assert state(activate)[0] == before


@pytest.mark.parametrize("change", ["block edited", "block removed", "block doubled", "mode"])
def test_what_the_role_manages_changes_it(activate: Path, change: str) -> None:
    before = state(activate)[0]
    text = activate.read_text()
    if change == "block edited":
        activate.write_text(text.replace("count=2", "count=4"))
    elif change == "block removed":
        activate.write_text(text.replace(BLOCK, ""))
    elif change == "block doubled":
        activate.write_text(text + BLOCK)
    else:
        activate.chmod(0o600)
    assert state(activate)[0] != before


def test_a_missing_activate_is_reported_not_fatal(tmp_path: Path) -> None:
    _, seen = state(tmp_path / "missing")
    assert seen["activate"] == {"error": "No such file or directory"}


def test_a_distribution_added_removed_or_changed_changes_it(tmp_path: Path, activate: Path) -> None:
    """In a venv of its own, run by the venv's python as the role runs it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )

    def line() -> str:
        argv = [str(python), "-I", "-B", "-c", SCRIPT.read_text(), str(activate)]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def install(version: str) -> None:
        for old in site.glob("opt_einsum-*.dist-info"):
            (old / "METADATA").unlink()
            old.rmdir()
        info = site / f"opt_einsum-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: opt_einsum\nVersion: {version}\n"
        )

    empty = line()
    install("3.4.0")
    installed = line()
    assert ["opt_einsum", "3.4.0"] in json.loads(installed)["distributions"]
    install("3.3.0")
    assert line() not in (empty, installed)
    install("3.4.0")
    assert line() == installed
    for info in site.glob("opt_einsum-*.dist-info"):
        (info / "METADATA").unlink()
        info.rmdir()
    assert line() == empty
