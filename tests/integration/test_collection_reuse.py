"""Another repository reuses cloudtpu.pod as a collection, on the ansible-core that runs the tests
(`make integration`: the pinned one; `make test-next`: the newest).

The collection is built with ansible-galaxy from a copy of this working tree with stray files
planted in it (a .env, a private key, notes, caches): galaxy.yml's manifest is an allow-list, so
none of them ships, and every file of the folders a user gets (plugins, roles, playbooks, meta,
docs/docsite) does. The tarball is installed (no version-mismatch override: meta/runtime.yml must
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

# What a user gets: these files at the top and in changelogs/, and everything under these folders.
# README.rst is the collection's README; README.md, the README of a clone, does not ship.
SHIPPED_FILES = {
    "README.rst",
    "LICENSE",
    "CHANGELOG.md",
    "changelogs/changelog.yaml",
    "changelogs/config.yaml",
}
SHIPPED_FOLDERS = ("meta/", "plugins/", "roles/", "playbooks/", "docs/docsite/")
# What ansible-galaxy writes into every tarball.
GENERATED = {"MANIFEST.json", "FILES.json"}
# Stray files and local state planted in the copy that is built: none may ship.
FAKE_KEY = "fake private key planted by the test: it must never ship\n"
PLANTED = {
    ".env": "CLOUDTPU_TOKEN=planted\n",
    "secret.pem": FAKE_KEY,
    "playbooks/.env": "CLOUDTPU_TOKEN=planted\n",
    "playbooks/vars/.env.yml": "token: planted\n",
    "playbooks/.DS_Store": "planted\n",
    "roles/base/files/id_ed25519": FAKE_KEY,
    "roles/framework/files/secret.pem": FAKE_KEY,
    "roles/libtpu/files/tpu_unlock/__pycache__/cli.cpython-311.pyc": "planted\n",
    "roles/tcmalloc/tasks/.main.yml.swp": "planted\n",
    "plugins/modules/notes.txt": "planted\n",
    "plugins/inventory/__pycache__/tpu_vm.cpython-311.pyc": "planted\n",
    "meta/.env": "CLOUDTPU_TOKEN=planted\n",
    "docs/docsite/rst/notes.txt": "planted\n",
    "changelogs/.plugin-cache.yaml": "planted: true\n",
    ".demo/id_ed25519": FAKE_KEY,
    ".cache/facts/pod-a-w0": "planted\n",
    ".venv-next/bin/python": "planted\n",
    "cloudtpu-pod-0.0.1.tar.gz": "planted\n",
}


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


def _working_tree_files() -> list[str]:
    """The files of the working tree: tracked and new, not ignored, no symlinks."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(
        name
        for name in set(filter(None, listed.split("\0")))
        if (REPO / name).is_file() and not (REPO / name).is_symlink()
    )


def _working_tree_copy(dest: Path) -> None:
    """The files of the working tree, plus the planted stray files and local state."""
    for name in _working_tree_files():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, dest / name)
    (dest / "collections" / "ansible_collections" / "cloudtpu").mkdir(parents=True)
    (dest / "collections" / "ansible_collections" / "cloudtpu" / "pod").symlink_to("../../..")
    for name, text in PLANTED.items():
        assert not (dest / name).exists(), f"{name} is in the working tree; plant another name"
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text)


def _shipped_names(tarball: Path) -> set[str]:
    with tarfile.open(tarball) as archive:
        return {member.name for member in archive.getmembers() if member.isfile()}


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


def test_tarball_ships_no_planted_file(tarball: Path) -> None:
    shipped = sorted(set(PLANTED) & _shipped_names(tarball))
    assert not shipped, f"stray files in the tarball: {shipped}"


def test_tarball_ships_every_file_of_the_collection_and_nothing_else(tarball: Path) -> None:
    """The tarball equals the working tree's files in the shipped places: a file kind that
    galaxy.yml's manifest does not name (a new role script, a plugin's doc sidecar) is missing."""
    expected = {
        name
        for name in _working_tree_files()
        if name in SHIPPED_FILES or name.startswith(SHIPPED_FOLDERS)
    }
    names = _shipped_names(tarball) - GENERATED
    missing, extra = sorted(expected - names), sorted(names - expected)
    assert not missing, f"not shipped (name them in galaxy.yml's manifest): {missing}"
    assert not extra, f"shipped but not part of the collection: {extra}"
    assert GENERATED <= _shipped_names(tarball)


def test_tarball_holds_what_a_user_needs(tarball: Path) -> None:
    names, files = _shipped_names(tarball), _working_tree_files()
    roles = sorted({name.split("/")[1] for name in files if name.startswith("roles/")})
    needed = {
        "README.rst",
        "LICENSE",
        "meta/runtime.yml",
        "meta/execution-environment.yml",
        "changelogs/changelog.yaml",
        *(f"roles/{role}/{part}/main.yml" for role in roles for part in ("meta", "tasks")),
        *(n for n in files if n.startswith("playbooks/") and n.count("/") == 1),
        *(n for n in files if n.startswith("plugins/") and n.endswith(".py")),
    }
    assert "tcmalloc" in roles and "playbooks/site.yml" in needed, (roles, sorted(needed))
    assert needed <= names, f"missing: {sorted(needed - names)}"
    stray = sorted(n for n in names if "__pycache__" in n.split("/") or n.endswith(".pyc"))
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


def test_pull_mode_finds_its_hashed_lock_in_the_installed_collection(project: Path) -> None:
    """pull_options reads its defaults and the workers' lock from the collection it is part of
    (playbooks/templates/pull_requirements.txt), installed from the tarball."""
    pull = {
        "bootstrap": "pull",
        "repo": "https://git.example.test/cloudtpu-pod.git",
        "version": "0123456789abcdef0123456789abcdef01234567",
        "nodes": ["pod-a"],
    }
    play = project / "pull-lock.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Pull mode's lock in the installed collection",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "vars": {"raw": pull, "pull": "{{ raw | cloudtpu.pod.pull_options }}"},
                    "tasks": [
                        {
                            "name": "Check the lock",
                            "ansible.builtin.assert": {
                                "that": [
                                    "pull.ok",
                                    "pull.hashed",
                                    "pull.lock is search('(?m)^ansible-core==')",
                                    "pull.lock is search('--hash=sha256:[0-9a-f]{64}')",
                                    "pull.uv_lock is search('^uv==')",
                                ],
                                "fail_msg": "{{ pull.message }}",
                            },
                        }
                    ],
                }
            ]
        )
    )
    command = [str(BIN / "ansible-playbook"), "-i", "localhost,", str(play)]
    result = _run(command, project, _env(project))
    assert "failed=0" in result.stdout, result.stdout[-3000:]


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
