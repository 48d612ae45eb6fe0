"""Another repository reuses cloudtpu.pod as a collection.

The collection is built with ansible-galaxy from this repository, installed into a folder
outside it, and used from a project directory that knows nothing of this repository: the
inventory plugin lists a pod from the emulator and a role runs on the control machine
(tcmalloc in `keep` mode, which only reports). Galaxy cannot be reached here, so the
google.cloud dependency comes from the ansible package (`--no-deps`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import plain
from tools.tpu_emulator.testing import REPO, TOKEN, EmulatorProcess, node

BIN = REPO / ".venv" / "bin"


def _env(project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "CLOUDTPU_"))}
    env.update(
        ANSIBLE_CONFIG=str(project / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(project / ".tmp"),
        HOME=str(project),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.update(extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout[-3000:]}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project outside the repository with the built collection installed into it."""
    root = tmp_path_factory.mktemp("reuse")
    build, project = root / "build", root / "project"
    build.mkdir()
    project.mkdir()
    (project / "ansible.cfg").write_text(
        "[defaults]\ncollections_path = ./collections\n"
        "[inventory]\nenable_plugins = cloudtpu.pod.tpu_vm, yaml\n"
    )
    env = _env(project)
    _run(
        [
            str(BIN / "ansible-galaxy"),
            "collection",
            "build",
            str(REPO),
            "--output-path",
            str(build),
        ],
        cwd=root,
        env=env,
    )
    tarballs = sorted(build.glob("cloudtpu-pod-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    _run(
        [
            str(BIN / "ansible-galaxy"),
            "collection",
            "install",
            "--no-deps",
            "-p",
            str(project / "collections"),
            str(tarballs[0]),
        ],
        cwd=project,
        env=env,
    )
    return project


def test_the_built_collection_leaves_out_tests_and_tooling(project: Path) -> None:
    installed = project / "collections" / "ansible_collections" / "cloudtpu" / "pod"
    assert (installed / "plugins" / "inventory" / "tpu_vm.py").is_file()
    assert (installed / "roles" / "tcmalloc" / "tasks" / "main.yml").is_file()
    for absent in ("molecule", "tests", ".venv", "collections", "bench"):
        assert not (installed / absent).exists(), f"{absent} was packed into the collection"


def test_inventory_plugin_from_the_installed_collection(project: Path) -> None:
    state = project / "state.yml"
    state.write_text(
        yaml.safe_dump(
            {
                "projects": {
                    "reuse-project": {
                        "zones": {"us-central2-b": {"nodes": [node("reuse-pod", "v4-16")]}}
                    }
                }
            }
        )
    )
    source = project / "pods.tpu_vm.yml"
    with EmulatorProcess(state) as emulator:
        source.write_text(
            yaml.safe_dump(
                {
                    "plugin": "cloudtpu.pod.tpu_vm",
                    "projects": ["reuse-project"],
                    "base_url": emulator.api_url,
                    "auth_kind": "accesstoken",
                    "access_token": TOKEN,
                }
            )
        )
        result = _run(
            [str(BIN / "ansible-inventory"), "-i", str(source), "--list"],
            cwd=project,
            env=_env(project),
        )
    data = plain(json.loads(result.stdout))
    assert sorted(data["tpu_node_reuse_pod"]["hosts"]) == ["reuse-pod-w0", "reuse-pod-w1"]
    assert data["tpu_coordinator"]["hosts"] == ["reuse-pod-w0"]


def test_role_from_the_installed_collection(project: Path) -> None:
    play = project / "play.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Use a role of the installed collection",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": True,
                    "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
                    "roles": [{"role": "cloudtpu.pod.tcmalloc", "tpu_tcmalloc_mode": "keep"}],
                }
            ]
        )
    )
    result = _run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", str(play)],
        cwd=project,
        env=_env(project),
    )
    assert "cloudtpu.pod.tcmalloc : Report" in result.stdout, result.stdout[-3000:]
    assert "failed=0" in result.stdout
    assert "changed=0" in result.stdout, "keep mode changed something on the control machine"
