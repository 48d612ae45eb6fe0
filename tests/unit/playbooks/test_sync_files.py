"""The filters behind playbooks/sync.yml: sync_options (source, destination, checks),
sync_files (what is copied: no .git, nothing a .gitignore names) and sync_stale (what
tpu_sync_delete=true removes on a worker), the last two over module_utils/tpu_sync_files. The
copy itself runs against a pod in tests/integration/test_run_playbook.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter import sync_files as files_plugin
from ansible_collections.cloudtpu.pod.plugins.filter import sync_stale as stale_plugin
from ansible_collections.cloudtpu.pod.plugins.filter.sync_options import repo_name, sync_options
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_sync_files import (
    Ignore,
    parse_rules,
    sync_files,
    sync_stale,
)

HOME = "/home/tpu"


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tree(
        tmp_path / "myproject",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            ".gitignore": "# outputs\ndata/\n*.pyc\n!keep.pyc\n/top.txt\nlogs/*.log\n",
            "train.py": "",
            "a.pyc": "",
            "keep.pyc": "",
            "top.txt": "",
            "src/top.txt": "",
            "src/m.py": "",
            "src/m.pyc": "",
            "data/blob": "",
            "logs/run.log": "",
            "logs/README": "",
            "src/.gitignore": "generated/\n",
            "src/generated/x.py": "",
            "deep/a/b/data/x": "",
        },
    )


def test_sync_files_leaves_out_git_and_ignored(project: Path):
    got = sync_files(str(project))
    assert got["files"] == [
        ".gitignore",
        "keep.pyc",
        "logs/README",
        "src/.gitignore",
        "src/m.py",
        "src/top.txt",
        "train.py",
    ]
    # .git, a.pyc, top.txt, src/m.pyc, data/, logs/run.log, src/generated/, deep/a/b/data/
    assert got["ignored"] == 8
    assert files_plugin.sync_files(str(project)) == got


def test_sync_files_refuses_what_is_not_a_folder(tmp_path: Path):
    message = f"sync_files: {str(tmp_path / 'none')!r} is not a folder on this machine"
    with pytest.raises(ValueError) as refused:
        sync_files(str(tmp_path / "none"))
    assert str(refused.value) == message
    with pytest.raises(AnsibleFilterError) as failed:
        files_plugin.sync_files(str(tmp_path / "none"))
    assert failed.value.message == message


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("*.log", "a/b/c.log", False, True),
        ("/build", "build", True, True),
        ("/build", "src/build", True, False),
        ("build/", "src/build", True, True),
        ("build/", "build", False, False),  # a file named build is not a folder
        ("doc/*.txt", "doc/a.txt", False, True),
        ("doc/*.txt", "doc/x/a.txt", False, False),
        ("**/out", "a/b/out", True, True),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("x?.py", "x1.py", False, True),
        ("x[0-9].py", "xa.py", False, False),
        ("\\#notes", "#notes", False, True),
    ],
)
def test_gitignore_patterns(pattern, path, is_dir, ignored):
    rules = Ignore()
    rules.add(parse_rules(pattern))
    assert rules.match(path, is_dir) is ignored


def test_sync_stale_keeps_ignored_and_git(project: Path):
    files = sync_files(str(project))["files"]
    remote = [
        *files,
        "old.py",
        "src/old.py",
        "data/remote.bin",
        "b.pyc",
        ".git/config",
        "src/generated/y.py",
        "./gone.txt",
    ]
    assert sync_stale(remote, str(project), files) == ["gone.txt", "old.py", "src/old.py"]
    assert stale_plugin.FilterModule().filters() == {"sync_stale": sync_stale}


@pytest.mark.parametrize(
    ("repo", "name"),
    [
        ("https://example.org/me/model.git", "model"),
        ("https://example.org/me/model", "model"),
        ("https://example.org/me/model/", "model"),
        ("git@example.org:me/model.git", "model"),
        ("file:///srv/git/model.git", "model"),
    ],
)
def test_repository_names(repo, name):
    assert repo_name(repo) == name


def test_folder_destination_defaults_to_the_home(project: Path, monkeypatch):
    monkeypatch.chdir(project.parent)
    got = sync_options({"src": "./myproject", "delete": "true"}, HOME)
    assert got["ok"], got
    assert (got["mode"], got["src"], got["dest"]) == ("folder", str(project), f"{HOME}/myproject")
    assert got["delete"] is True and got["needs_root"] is False


def test_repository_destination_and_version():
    got = sync_options({"repo": "https://example.org/me/model.git", "version": "v1.2"}, HOME)
    assert got["ok"], got
    assert (got["mode"], got["dest"], got["version"]) == ("git", f"{HOME}/model", "v1.2")
    assert sync_options({"repo": "https://example.org/me/model.git"}, HOME)["version"] == "HEAD"


@pytest.mark.parametrize(
    ("dest", "needs_root"), [(f"{HOME}/code/x", False), ("/opt/model", True), ("/srv/m", True)]
)
def test_allowed_destinations(dest, needs_root):
    got = sync_options({"repo": "https://example.org/me/model.git", "dest": dest}, HOME)
    assert got["ok"], got
    assert got["dest"] == dest and got["needs_root"] is needs_root


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"repo": "r.git", "dest": "/etc/model"}, "tpu_sync_dest is"),
        ({"repo": "r.git", "dest": "/opt"}, "tpu_sync_dest is"),
        ({"repo": "r.git", "dest": HOME}, "tpu_sync_dest is"),
        ({"repo": "r.git", "dest": "/home/other/x"}, "tpu_sync_dest is"),
        ({"repo": "r.git", "dest": f"{HOME}/../x"}, "tpu_sync_dest is"),
        ({"repo": "r.git", "dest": "model"}, "tpu_sync_dest is"),
        ({"src": "/no/such/folder"}, "no such folder on this machine"),
        ({"src": "/tmp", "repo": "r.git"}, "not both"),
        ({"src": "/tmp", "version": "main"}, "tpu_sync_version goes with tpu_sync_repo"),
        ({"repo": "r.git", "version": "--upload-pack=x"}, "not a branch, tag or commit"),
        ({"repo": "r.git", "delete": "perhaps"}, 'tpu_sync_delete is "perhaps"'),
    ],
)
def test_refusals_name_the_variable(raw, message):
    got = sync_options(raw, HOME)
    assert not got["ok"]
    assert message in got["message"], got["message"]


def test_nothing_asked_is_no_mode():
    got = sync_options({}, HOME)
    assert got["ok"] and got["mode"] == "" and got["dest"] == ""
