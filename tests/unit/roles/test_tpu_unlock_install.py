"""How the libtpu role installs tpu-unlock: the package tpu_unlock in /usr/local/lib/cloudtpu/,
root's alone, and the command /usr/local/bin/tpu-unlock, which loads the package from there only.

The tool runs as root, so no folder a user can write may ever be on its import path: the entry
script runs with python3 -I (no PYTHONPATH, no user site-packages, no current folder) and puts
the installed folder first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.tpu_unlock_harness import FILES, INSTALLED_LIB, PACKAGE, PROGRAM, TOOL

ROLE = FILES.parent
FOLDERS = [INSTALLED_LIB, f"{INSTALLED_LIB}/tpu_unlock"]


def _yaml(path: Path) -> object:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def role_vars() -> dict:
    found = _yaml(ROLE / "vars" / "main.yml")
    assert isinstance(found, dict)
    return found


def install_tasks() -> dict[str, dict]:
    tasks = _yaml(ROLE / "tasks" / "install.yml")
    assert isinstance(tasks, list)
    return {next(key for key in task if "." in key): task for task in tasks}


def test_the_role_installs_every_file_of_the_package_and_the_command() -> None:
    items = role_vars()["tpu_libtpu__files"]
    package = sorted(f"tpu_unlock/{path.name}" for path in PACKAGE.glob("*.py"))
    assert sorted(i["src"] for i in items if i["src"] != "tpu-unlock") == package
    for item in items:
        if item["src"] == "tpu-unlock":
            assert item == {"src": "tpu-unlock", "dest": "/usr/local/bin/", "mode": "0755"}
        else:
            assert item["dest"] == f"{INSTALLED_LIB}/tpu_unlock/" and item["mode"] == "0644", item
    # the package first: a new command never runs with the package it replaces
    assert items[-1]["src"] == "tpu-unlock", items


def test_the_folders_and_files_are_root_s_alone() -> None:
    tasks = install_tasks()
    folders = tasks["ansible.builtin.file"]
    assert role_vars()["tpu_libtpu__folders"] == FOLDERS
    assert folders["loop"] == "{{ tpu_libtpu__folders }}"
    args = folders["ansible.builtin.file"]
    assert (args["owner"], args["group"], args["mode"], args["state"]) == (
        "root",
        "root",
        "0755",
        "directory",
    )
    copy = tasks["ansible.builtin.copy"]
    assert copy["loop"] == "{{ tpu_libtpu__files }}"
    args = copy["ansible.builtin.copy"]
    assert (args["owner"], args["group"], args["mode"]) == ("root", "root", "{{ item.mode }}")
    assert args["src"] == "{{ item.src }}" and args["dest"] == "{{ item.dest }}", args


def test_the_record_names_every_folder_and_file_it_installs() -> None:
    """A part edited or removed on the worker is drift: the role installs again."""
    variables = role_vars()
    variables.pop("tpu_libtpu__digest")
    templar = Templar(loader=DataLoader(), variables=variables)
    paths = templar.template(trust_as_template(variables["tpu_libtpu__paths"]))
    files = [f"{INSTALLED_LIB}/tpu_unlock/{path.name}" for path in PACKAGE.glob("*.py")]
    assert sorted(paths) == sorted([*FOLDERS, *files, "/usr/local/bin/tpu-unlock"])
    record = install_tasks()["cloudtpu.pod.tpu_state"]["cloudtpu.pod.tpu_state"]
    assert record["state"] == "record" and record["paths"] == "{{ tpu_libtpu__paths }}", record


def test_the_command_runs_isolated_from_the_installed_folder() -> None:
    lines = TOOL.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#!/usr/bin/python3 -I", lines[0]
    assert f'LIB = "{INSTALLED_LIB}"' in lines, "the library folder is a fixed, absolute path"
    assert os.access(TOOL, os.X_OK) and not any(os.access(p, os.X_OK) for p in PACKAGE.glob("*.py"))


def _decoy(folder: Path) -> Path:
    """A package tpu_unlock whose main says it was loaded, in a folder a user could write."""
    (folder / "tpu_unlock").mkdir()
    (folder / "tpu_unlock" / "__init__.py").write_text("")
    (folder / "tpu_unlock" / "cli.py").write_text("def main():\n    print('decoy')\n    return 9\n")
    return folder


def test_a_package_in_the_current_folder_or_pythonpath_is_never_loaded(tmp_path: Path) -> None:
    decoy = _decoy(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(decoy))
    result = subprocess.run(
        [*PROGRAM, "--help"], cwd=decoy, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and "usage: tpu-unlock" in result.stdout, result
    assert "decoy" not in result.stdout


def test_the_installed_folder_comes_first_even_without_isolation(tmp_path: Path) -> None:
    """Started as `python3 /usr/local/bin/tpu-unlock` (no -I), PYTHONPATH still loses."""
    decoy = _decoy(tmp_path)
    code = PROGRAM[-1]
    env = dict(os.environ, PYTHONPATH=str(decoy))
    result = subprocess.run(
        [sys.executable, "-B", "-c", code, "--help"],
        cwd=decoy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and "usage: tpu-unlock" in result.stdout, result
