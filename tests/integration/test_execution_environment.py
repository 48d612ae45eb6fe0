"""An execution environment with this collection: `ansible-builder create` accepts a definition
that installs the built tarball, and the builder's own introspection (what runs inside the image
build) finds the Python and system packages of meta/execution-environment.yml.

No image is built here (no registry to pull a base image from); `create` writes the build
context, which is as far as the definition and the collection's metadata go.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.tpu_emulator.testing import REPO

pytest.importorskip("ansible_builder", reason="ansible-builder is in requirements.txt (make setup)")

BIN = Path(sys.executable).parent


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["HOME"] = str(cwd)
    result = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout[-3000:]}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ee-build")
    _run(
        [str(BIN / "ansible-galaxy"), "collection", "build", str(REPO), "--output-path", str(out)],
        out,
    )
    (built,) = out.glob("cloudtpu-pod-*.tar.gz")
    return built


def test_builder_create_accepts_a_definition_with_the_collection(
    tarball: Path, tmp_path: Path
) -> None:
    (tmp_path / "requirements.yml").write_text(
        yaml.safe_dump({"collections": [{"name": tarball.name, "type": "file"}]})
    )
    (tmp_path / tarball.name).write_bytes(tarball.read_bytes())
    definition = {
        "version": 3,
        "images": {"base_image": {"name": "localhost/cloudtpu-ee-base:latest"}},
        "dependencies": {
            "ansible_core": {"package_pip": "ansible-core"},
            "ansible_runner": {"package_pip": "ansible-runner"},
            "galaxy": "requirements.yml",
        },
        "additional_build_files": [{"src": tarball.name, "dest": "collections"}],
    }
    (tmp_path / "execution-environment.yml").write_text(yaml.safe_dump(definition))
    command = [str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml"]
    _run([*command, "-c", "context", "--output-filename", "Dockerfile"], tmp_path)
    build = tmp_path / "context" / "_build"
    dockerfile = (tmp_path / "context" / "Dockerfile").read_text()
    assert "ansible-galaxy collection install" in dockerfile, dockerfile
    assert "introspect" in dockerfile, dockerfile
    assert (build / "collections" / tarball.name).is_file(), sorted(build.rglob("*"))
    assert tarball.name in (build / "requirements.yml").read_text()


def test_builder_introspection_finds_the_collection_requirements(
    tarball: Path, tmp_path: Path
) -> None:
    collections = tmp_path / "collections"
    install = [str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "--force"]
    _run([*install, "-p", str(collections), str(tarball)], tmp_path)
    introspect = [sys.executable, "-m", "ansible_builder._target_scripts.introspect"]
    found = yaml.safe_load(_run([*introspect, "introspect", str(collections)], tmp_path).stdout)
    python = [line.split()[0] for line in found["python"]]
    system = [line.split("#")[0].strip() for line in found["system"]]
    assert any(p.startswith("google-auth") for p in python), found
    assert any(p.startswith("requests") for p in python), found
    assert "openssh-client [platform:dpkg]" in system, found
    assert all("from collection cloudtpu.pod" in line for line in found["python"]), found
