"""Another repository reuses cloudtpu.pod as a collection, on the ansible-core that runs the tests
(`make integration`: the pinned one; `make test-next`: the newest).

The collection is built with ansible-galaxy from this working tree, its tarball is checked
against an allow-list, and it is installed (no version-mismatch override: meta/runtime.yml must
accept this ansible-core) into a project outside the repository that knows nothing of it. From
there: the inventory plugin lists a pod from the emulator, a role runs on the control machine,
every playbook of the collection passes `--syntax-check` as `cloudtpu.pod.<name>`, status runs
against the emulator, and a play sets the TPU modules' project, zone and credentials once with
`module_defaults: group/cloudtpu.pod.tpu`. No run may print a deprecation warning. Galaxy cannot
be reached here, so the dependencies come from the ansible package (`--no-deps`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import plain
from tools.tpu_emulator.testing import REPO, TOKEN, EmulatorProcess, node

BIN = Path(sys.executable).parent
PROJECT_ID = "reuse-project"
ZONE = "us-central2-b"

# What the tarball may hold: top-level entries, and the only files allowed under changelogs/.
SHIPPED = {
    "MANIFEST.json",
    "FILES.json",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    "changelogs",
    "docs",
    "meta",
    "plugins",
    "playbooks",
    "roles",
}
CHANGELOG_FILES = {"changelogs/changelog.yaml", "changelogs/config.yaml"}
REQUIRED = {
    "LICENSE",
    "CHANGELOG.md",
    "meta/runtime.yml",
    "meta/execution-environment.yml",
    "playbooks/site.yml",
    "plugins/inventory/tpu_vm.py",
    "roles/tcmalloc/tasks/main.yml",
}
# Never shipped, at any depth (local state planted in the copy that is built).
FORBIDDEN_PARTS = {"tests", "molecule", "__pycache__", ".cache", ".demo", ".venv", ".venv-next"}
PLANTED = [
    ".demo/id_ed25519",
    ".cache/facts/pod-a-w0",
    ".venv-next/bin/python",
    "plugins/inventory/__pycache__/tpu_vm.cpython-311.pyc",
    "cloudtpu-pod-0.0.1.tar.gz",
]


def _env(project: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANSIBLE_", "CLOUDTPU_", "GCP_", "COLLECTIONS_"))
    }
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
    output = f"{' '.join(cmd)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, output
    assert "[DEPRECATION WARNING]" not in result.stdout + result.stderr, output
    return result


def _working_tree_copy(dest: Path) -> None:
    """The files of the working tree (tracked and new, not ignored), plus planted local state."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / "collections" / "ansible_collections" / "cloudtpu").mkdir(parents=True)
    (dest / "collections" / "ansible_collections" / "cloudtpu" / "pod").symlink_to("../../..")
    for name in PLANTED:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text("local state, never shipped\n")


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("build")
    source, out = root / "pod", root / "out"
    source.mkdir()
    out.mkdir()
    _working_tree_copy(source)
    env = _env(root)
    _run(
        [
            str(BIN / "ansible-galaxy"),
            "collection",
            "build",
            str(source),
            "--output-path",
            str(out),
        ],
        root,
        env,
    )
    built = sorted(out.glob("cloudtpu-pod-*.tar.gz"))
    assert len(built) == 1, built
    return built[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, tarball: Path) -> Path:
    """A project outside the repository with the built collection installed into it."""
    project = tmp_path_factory.mktemp("project")
    (project / "ansible.cfg").write_text(
        "[defaults]\ncollections_path = ./collections\n"
        "[inventory]\nenable_plugins = cloudtpu.pod.tpu_vm, host_list, yaml\n"
        "any_unparsed_is_failed = true\n"
    )
    command = [str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps"]
    _run([*command, "-p", str(project / "collections"), str(tarball)], project, _env(project))
    return project


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    state = tmp_path_factory.mktemp("emulator") / "state.yml"
    nodes = [node("reuse-pod", "v4-16"), node("gone-pod", "v4-8", state="PREEMPTED")]
    state.write_text(
        yaml.safe_dump({"projects": {PROJECT_ID: {"zones": {ZONE: {"nodes": nodes}}}}})
    )
    with EmulatorProcess(state) as process:
        yield process


def _source(project: Path, emulator: EmulatorProcess, **options: object) -> Path:
    config = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": [PROJECT_ID],
        "base_url": emulator.api_url,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        **options,
    }
    path = project / "pods.tpu_vm.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_tarball_holds_the_collection_and_nothing_else(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        names = {m.name for m in archive.getmembers() if m.isfile()}
    top = {name.split("/", 1)[0] for name in names}
    assert top <= SHIPPED, f"not part of the collection: {sorted(top - SHIPPED)}"
    extra_changelog = {n for n in names if n.startswith("changelogs/")} - CHANGELOG_FILES
    assert not extra_changelog, sorted(extra_changelog)
    assert REQUIRED <= names, f"missing: {sorted(REQUIRED - names)}"
    stray = sorted(n for n in names if FORBIDDEN_PARTS & set(n.split("/")) or n.endswith(".pyc"))
    assert not stray, stray


def test_manifest_names_the_license_and_every_dependency(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("MANIFEST.json")
        assert member is not None
        info = json.load(member)["collection_info"]
    assert info["license"] == ["Apache-2.0"]
    assert set(info["dependencies"]) == {"google.cloud", "ansible.posix", "community.general"}
    assert all("<" in spec for spec in info["dependencies"].values()), info["dependencies"]


def test_inventory_plugin_from_the_installed_collection(
    project: Path, emulator: EmulatorProcess
) -> None:
    source = _source(project, emulator)
    command = [str(BIN / "ansible-inventory"), "-i", str(source), "--list"]
    data = plain(json.loads(_run(command, project, _env(project)).stdout))
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
    command = [str(BIN / "ansible-playbook"), "-i", "localhost,", str(play)]
    result = _run(command, project, _env(project))
    assert "cloudtpu.pod.tcmalloc : Report" in result.stdout, result.stdout[-3000:]
    assert "failed=0" in result.stdout
    assert "changed=0" in result.stdout, "keep mode changed something on the control machine"


def test_every_playbook_runs_by_its_collection_name(project: Path) -> None:
    installed = project / "collections" / "ansible_collections" / "cloudtpu" / "pod" / "playbooks"
    names = sorted(p.stem for p in installed.glob("*.yml"))
    assert {"site", "provision", "teardown", "status", "run", "verify"} <= set(names), names
    playbooks = [f"cloudtpu.pod.{name}" for name in names]
    command = [str(BIN / "ansible-playbook"), "-i", "localhost,", "--syntax-check", *playbooks]
    result = _run(command, project, _env(project))
    assert result.stdout.count("playbook: ") == len(names), result.stdout


def test_status_from_the_installed_collection(project: Path, emulator: EmulatorProcess) -> None:
    """Workers are reached on a closed local port: shown unreachable at once, nothing changed."""
    source = _source(
        project, emulator, compose={"ansible_host": "'127.0.0.1'", "ansible_port": "1"}
    )
    env = _env(project, CLOUDTPU_PROJECT=PROJECT_ID, CLOUDTPU_ZONES=ZONE)
    env.update(GCP_AUTH_KIND="accesstoken", GCP_ACCESS_TOKEN=TOKEN)
    env.update(CLOUDTPU_API_ENDPOINT=emulator.api_url)
    command = [str(BIN / "ansible-playbook"), "-i", str(source), "cloudtpu.pod.status"]
    result = _run(command, project, env)
    assert "reuse-pod" in result.stdout, result.stdout[-3000:]
    assert "gone-pod" in result.stdout, "the PREEMPTED node is missing from the table"
    assert "changed=" in result.stdout and "changed=1" not in result.stdout, result.stdout[-3000:]


def test_module_defaults_group_sets_project_zone_and_credentials_once(
    project: Path, emulator: EmulatorProcess
) -> None:
    defaults = {
        "project": PROJECT_ID,
        "zone": ZONE,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        "base_url": emulator.api_url,
    }
    play = [
        {
            "name": "TPU modules with their settings given once",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "module_defaults": {"group/cloudtpu.pod.tpu": defaults},
            "tasks": [
                {"name": "List", "cloudtpu.pod.tpu_node_info": {}, "register": "listed"},
                {
                    "name": "Read one node",
                    "cloudtpu.pod.tpu_node": {"name": "reuse-pod", "state": "present"},
                    "check_mode": True,
                    "register": "one",
                },
                {
                    "name": "A queued resource that does not exist stays absent",
                    "cloudtpu.pod.tpu_queued_resource": {"name": "no-such-qr", "state": "absent"},
                    "register": "qr",
                },
                {
                    "name": "Check what came back",
                    "ansible.builtin.assert": {
                        "that": [
                            "listed.nodes | map(attribute='name') | map('regex_replace',"
                            " '^.*/', '') | sort == ['gone-pod', 'reuse-pod']",
                            "one.node.acceleratorType == 'v4-16'",
                            "qr is not changed",
                        ]
                    },
                },
            ],
        }
    ]
    path = project / "module_defaults.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    command = [str(BIN / "ansible-playbook"), "-i", "localhost,", str(path)]
    result = _run(command, project, _env(project))
    assert "failed=0" in result.stdout, result.stdout[-3000:]
