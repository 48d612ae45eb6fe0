"""The python role's tool venv of uv: what its look at the host (roles/python/files/host_probe.py)
makes of the folder at tpu_python_uv_dir, what the venv's own check prints
(files/tool_venv_check.py), and the task that creates, rebuilds or marks it (tasks/uv.yml).

The role may empty and rebuild only its own tool venv: a folder with its marker file, or a venv
holding nothing but pip, setuptools and uv (made before the marker). A symbolic link, a folder
reached through one, someone else's folder or one with other things in it is refused with a
message that names tpu_python_uv_dir, its value and what is allowed, and is never touched.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles" / "python"
PROBE = ROLE / "files" / "host_probe.py"
CHECK = (ROLE / "files" / "tool_venv_check.py").read_text()
MARKER = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["tpu_python__uv_marker"]
UV = "0.13.8"

spec = importlib.util.spec_from_file_location("host_probe", PROBE)
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def look(path: Path) -> dict:
    return probe.tool_venv(str(path), MARKER, CHECK)


def fake_dist(site: Path, name: str, version: str, code: str = "") -> None:
    """A distribution as pip leaves it: its package and its dist-info."""
    (site / name).mkdir()
    (site / name / "__init__.py").write_text(code)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def fake_uv_binary(venv: Path, answer: str = f"uv {UV}") -> None:
    binary = venv / "bin" / "uv"
    binary.write_text(f"#!/bin/sh\necho '{answer} (x86_64-unknown-linux-gnu)'\n")
    binary.chmod(0o755)


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3.*")) / "site-packages"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tool venv as the role leaves it (pip and uv stand-ins, no network), made once."""
    venv = tmp_path_factory.mktemp("template") / "uv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = site_packages(venv)
    fake_dist(site, "pip", "24.0", '__version__ = "24.0"\n')
    fake_dist(site, "uv", UV)
    fake_uv_binary(venv)
    return venv


@pytest.fixture
def legacy(template: Path, tmp_path: Path) -> Path:
    """A working tool venv without the marker: what the role made before it kept one."""
    venv = tmp_path / "opt" / "uv"
    venv.parent.mkdir()
    subprocess.run(["cp", "-a", str(template), str(venv)], check=True)
    return venv


@pytest.fixture
def tool(legacy: Path) -> Path:
    """A working tool venv of the role's, marked."""
    (legacy / MARKER).write_text("the role's\n")
    return legacy


def test_nothing_there_or_an_empty_folder_is_created(tmp_path: Path) -> None:
    assert look(tmp_path / "uv")["state"] == "absent"
    (tmp_path / "uv").mkdir()
    assert look(tmp_path / "uv")["state"] == "empty"


def test_a_working_tool_venv_answers_its_uv_version(tool: Path) -> None:
    found = look(tool)
    assert found == {
        "state": "ok",
        "problem": "",
        "marked": True,
        "uv": UV,
        "uv_bin": True,
        "error": "",
    }


def test_a_working_venv_without_uv_needs_it_installed(tool: Path) -> None:
    site = site_packages(tool)
    subprocess.run(["rm", "-rf", str(site / "uv"), str(site / f"uv-{UV}.dist-info")], check=True)
    (tool / "bin" / "uv").unlink()
    found = look(tool)
    assert (found["state"], found["uv"], found["uv_bin"]) == ("ok", None, False)


@pytest.mark.parametrize(
    ("breakage", "error"),
    [
        ("python-dangling", "No such file or directory"),
        ("pyvenv-cfg-gone", "does not run as the venv"),
        ("pip-removed", "No module named 'pip'"),
        ("uv-package-removed", "No module named 'uv'"),
        ("uv-binary-removed", "No such file or directory"),
        ("uv-binary-other", "uv's binary answers 'uv 0.1.0"),
    ],
)
def test_a_broken_tool_venv_of_the_role_is_rebuilt(tool: Path, breakage: str, error: str) -> None:
    site = site_packages(tool)
    if breakage == "python-dangling":
        (tool / "bin" / "python").unlink()
        (tool / "bin" / "python").symlink_to("/usr/bin/python3.0-removed")
    elif breakage == "pyvenv-cfg-gone":
        (tool / "pyvenv.cfg").unlink()
    elif breakage == "pip-removed":
        subprocess.run(["rm", "-rf", str(site / "pip")], check=True)
    elif breakage == "uv-package-removed":
        subprocess.run(["rm", "-rf", str(site / "uv")], check=True)
    elif breakage == "uv-binary-removed":
        (tool / "bin" / "uv").unlink()
    else:
        fake_uv_binary(tool, "uv 0.1.0")
    found = look(tool)
    assert found["state"] == "broken" and found["problem"] == "", found
    assert error in found["error"], found
    assert found["uv"] is None


def test_a_venv_the_role_made_before_the_marker_is_taken_over(legacy: Path) -> None:
    found = look(legacy)
    assert (found["state"], found["marked"], found["uv"]) == ("ok", False, UV), found
    (legacy / "bin" / "python").unlink()
    (legacy / "bin" / "python").symlink_to("/usr/bin/python3.0-removed")
    assert look(legacy)["state"] == "broken"


def refusal(path: Path, reason: str) -> str:
    found = look(path)
    assert found["state"] == "refused", found
    problem = found["problem"]
    assert problem.startswith(f"tpu_python_uv_dir is {json.dumps(str(path))}: {reason}"), problem
    assert "allowed: a folder that does not exist yet, an empty folder, or the tool venv" in problem
    assert MARKER in problem and "set tpu_python_uv_dir to another path" in problem
    return problem


def tree(path: Path) -> list[tuple[str, str]]:
    """Every name under path with its kind and content (or link target)."""
    seen = []
    for root, dirs, files in os.walk(path):
        for name in sorted(dirs + files):
            full = Path(root) / name
            what = os.readlink(full) if full.is_symlink() else "dir" if full.is_dir() else ""
            if full.is_file() and not full.is_symlink():
                what = full.read_bytes().hex()
            seen.append((str(full.relative_to(path)), what))
    return sorted(seen)


def test_a_folder_with_other_things_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    (folder / "models").mkdir()
    problem = refusal(folder, "it holds other things than a tool venv made by this role")
    assert "(models, notes.txt)" in problem


def test_a_venv_with_other_packages_is_refused(legacy: Path) -> None:
    fake_dist(site_packages(legacy), "requests", "2.32.0")
    refusal(legacy, "it holds other things than a tool venv made by this role")


def test_a_venv_with_other_files_is_refused(legacy: Path) -> None:
    (legacy / "train.py").write_text("print('mine')\n")
    refusal(legacy, "it holds other things than a tool venv made by this role")
    (legacy / "train.py").unlink()
    (legacy / "bin" / "jupyter").write_text("#!/bin/sh\n")
    refusal(legacy, "it holds other things than a tool venv made by this role")


def test_a_symbolic_link_is_refused_even_to_a_tool_venv(tool: Path, tmp_path: Path) -> None:
    link = tmp_path / "linked"
    link.symlink_to(tool)
    refusal(link, f"it is a symbolic link to {tool}")


def test_a_folder_reached_through_a_symbolic_link_is_refused(tool: Path, tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(tool.parent)
    refusal(tmp_path / "via" / "uv", f"it is reached through a symbolic link (it is {tool})")
    refusal(tmp_path / "via" / "new", "it is reached through a symbolic link")


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "uv").write_text("")
    refusal(tmp_path / "uv", "it is not a folder")


def test_a_folder_others_can_write_is_refused(tool: Path) -> None:
    tool.chmod(0o777)
    refusal(tool, "it is owned by uid")


def test_a_marker_that_is_a_link_does_not_count(tmp_path: Path) -> None:
    folder = tmp_path / "uv"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    (tmp_path / "marker").write_text("")
    (folder / MARKER).symlink_to(tmp_path / "marker")
    refusal(folder, "it holds other things than a tool venv made by this role")


def test_the_state_line_is_the_same_for_the_same_venv(tool: Path) -> None:
    """What the record keeps and the state check compares: one JSON line, the same each time."""

    def state() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(tool / "bin" / "python"), "-I", "-B", "-c", CHECK],
            capture_output=True,
            text=True,
            cwd="/",
            check=False,
        )

    first, second = state(), state()
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    seen = json.loads(first.stdout)
    assert seen["uv"] == UV and seen["pip"] == "24.0" and seen["prefix"] == str(tool)


def test_the_probe_prints_every_answer_in_one_object(tool: Path, tmp_path: Path) -> None:
    def run(uv_dir: str) -> dict:
        argv = ["3.10", "root", str(tmp_path / "venv"), uv_dir, MARKER, CHECK]
        done = subprocess.run(
            [sys.executable, "-c", PROBE.read_text(), *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    seen = run(str(tool))
    assert set(seen) == {"apt_policy", "passwd", "venv_cfg", "tool"}
    assert seen["passwd"][0] == "root" and seen["venv_cfg"] is None
    assert seen["tool"]["state"] == "ok"
    # pip is the installer: the tool venv is not looked at
    assert run("")["tool"] == {"state": "unused"}


# The task of tasks/uv.yml that creates, rebuilds or marks the tool venv, run as the role runs
# it, with a stand-in for `python -m venv` that records its call.
TASKS = yaml.safe_load((ROLE / "tasks" / "uv.yml").read_text())
CREATE = next(t for t in TASKS if t["name"].startswith("Create or rebuild the tool venv"))
SCRIPT = CREATE["ansible.builtin.command"]["argv"][2]


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    python = tmp_path / "python3.x"
    python.write_text('#!/bin/sh\n[ "$1 $2 $3" = "-m venv --" ] && echo made > "$4/pyvenv.cfg"\n')
    python.chmod(0o755)
    return python


def create(folder: Path, action: str, python: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", SCRIPT, "sh", str(folder), action, str(python), MARKER, "the role's"],
        capture_output=True,
        text=True,
        check=False,
    )


def test_create_writes_the_marker_then_makes_the_venv(tmp_path: Path, fake_python: Path) -> None:
    folder = tmp_path / "opt" / "cloudtpu" / "uv"
    assert create(folder, "create", fake_python).returncode == 0
    assert sorted(os.listdir(folder)) == [MARKER, "pyvenv.cfg"]
    assert (folder / MARKER).read_text() == "the role's\n"
    assert oct((folder / MARKER).stat().st_mode & 0o777) == "0o644"
    assert look(folder)["marked"] is True


def test_rebuild_keeps_only_the_marker_before_making_the_venv(
    tool: Path, fake_python: Path
) -> None:
    (tool / MARKER).write_text("kept\n")
    assert create(tool, "rebuild", fake_python).returncode == 0
    assert sorted(os.listdir(tool)) == [MARKER, "pyvenv.cfg"]
    assert (tool / MARKER).read_text() == "kept\n"


def test_mark_only_adds_the_marker(legacy: Path, fake_python: Path) -> None:
    before = tree(legacy)
    assert create(legacy, "mark", fake_python).returncode == 0
    assert tree(legacy) == sorted([*before, (MARKER, b"the role's\n".hex())])


def test_the_task_never_follows_a_symbolic_link(tool: Path, tmp_path: Path, fake_python: Path):
    link = tmp_path / "linked"
    link.symlink_to(tool)
    before = tree(tool)
    done = create(link, "rebuild", fake_python)
    assert done.returncode != 0 and "symbolic link" in done.stderr
    assert tree(tool) == before


def test_the_task_runs_only_for_an_action_and_a_rebuild_is_not_skipped_by_creates() -> None:
    assert CREATE["when"] == "tpu_python__uv_venv_action != ''"
    assert (
        "omit if tpu_python__uv_venv_action == 'rebuild'"
        in CREATE["ansible.builtin.command"]["creates"]
    )
