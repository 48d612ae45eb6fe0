"""The checks of what the day-two playbooks take on this machine: local paths
(module_utils/tpu_local_paths.py), booleans (tpu_checks.py), Google Cloud names
(tpu_name_checks.py), and the filters that use them (logs_options, run_options, sync_options,
babysit_options).

Every refusal is asserted to name the variable, to show the value as given and to say what is
allowed; every accepted case to return exactly ''.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_options import babysit_options
from ansible_collections.cloudtpu.pod.plugins.filter.logs_options import logs_options
from ansible_collections.cloudtpu.pod.plugins.filter.run_options import run_options
from ansible_collections.cloudtpu.pod.plugins.filter.sync_options import sync_options
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    boolean_problem,
    number_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    local_path,
    local_path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import gcp_name_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import run_id_problem

from tests.unit.checks.test_checks import assert_refusal as refusal_of


def assert_refusal(message: str, name: str, value: Any, reason: str) -> None:
    """test_checks' assertion (name, value as given, reason, 'allowed: '), any allowed text."""
    refusal_of(message, name, value, reason, "")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder with a project, a script, and links to them and to /etc."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.sh").write_text("echo hi\n")
    (tmp_path / "notes.txt").write_text("x\n")
    (tmp_path / "linked").symlink_to(tmp_path / "proj")
    (tmp_path / "etc").symlink_to("/etc")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("value", "kind", "reason"),
    [
        (None, "folder", "not a path"),
        ("", "folder", "not a path"),
        (["proj"], "folder", "not a path"),
        ("proj\n", "folder", "control character"),
        ("proj\x1b", "folder", "a control character (U+001B)"),
        ("proj\u202e", "folder", "a bidirectional-text control character (U+202E)"),
        ("proj\u2067x", "new folder", "a bidirectional-text control character (U+2067)"),
        ("../proj", "folder", "it contains '..'"),
        ("proj/../proj", "folder", "it contains '..'"),
        ("/tmp/../etc", "folder", "it contains '..'"),
        ("~root/x", "folder", "another user's home"),
        ("/", "folder", "it is a system folder"),
        ("/etc", "folder", "it is a system folder"),
        ("/tmp", "new folder", "it is a system folder"),
        ("/etc/passwd", "file", "in the system folder /etc"),
        ("/usr/share/doc", "folder", "in the system folder /usr/share"),
        ("linked", "folder", "through the symbolic link"),
        ("linked/train.sh", "file", "through the symbolic link"),
        ("etc/passwd", "file", "through the symbolic link"),
        ("etc/cloudtpu", "new folder", "through the symbolic link"),
        ("missing.sh", "file", "no such file on this machine"),
        ("proj", "file", "no such file on this machine"),
        ("missing", "folder", "no such folder on this machine"),
        ("notes.txt", "folder", "no such folder on this machine"),
        ("notes.txt", "new folder", "is not a folder"),
    ],
)
def test_local_path_refused(here: Path, value: Any, kind: str, reason: str) -> None:
    assert_refusal(local_path_problem(value, "tpu_x", kind), "tpu_x", value, reason)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("proj", "folder"),
        ("./proj/", "folder"),
        ("proj/train.sh", "file"),
        ("~/proj/train.sh", "file"),
        ("logs", "new folder"),
        ("proj", "new folder"),
        ("./.cache/runs", "new folder"),
    ],
)
def test_local_path_accepted(here: Path, value: str, kind: str) -> None:
    assert local_path_problem(value, "tpu_x", kind) == ""
    assert local_path_problem(str(here / value.lstrip("~/")), "tpu_x", kind) == ""


def test_local_path_is_the_real_folder(here: Path) -> None:
    assert local_path("proj/") == str(here / "proj")
    assert local_path("~/proj") == os.path.realpath(here) + "/proj"
    assert local_path("/srv/x//y") == "/srv/x/y"


@pytest.mark.parametrize("value", [True, False, "true", "No", " on ", "1", 0, "yes"])
def test_boolean_accepted(value: Any) -> None:
    assert boolean_problem(value, "tpu_x") == ""


@pytest.mark.parametrize("value", ["maybe", "", None, 2, [], "truee"])
def test_boolean_refused(value: Any) -> None:
    assert_refusal(boolean_problem(value, "tpu_x"), "tpu_x", value, "not true or false")


@pytest.mark.parametrize(
    ("value", "kind", "many"),
    [
        ("my-project", "project", False),
        ("us-central2-b", "zone", False),
        ("proj-a,proj-b", "project", True),
        (["us-east5-a", "europe-west4-b"], "zone", True),
        ("", "zone", True),
        ([], "project", True),
    ],
)
def test_gcp_names_accepted(value: Any, kind: str, many: bool) -> None:
    assert gcp_name_problem(value, "tpu_x", kind, many) == ""


@pytest.mark.parametrize(
    ("value", "kind", "many", "reason"),
    [
        ("Bad Project", "project", False, "not a project ID"),
        ("../x", "project", False, "not a project ID"),
        ("my-project\n", "project", False, "not a project ID"),
        ("us-central2-b\n", "zone", False, "not a zone"),
        (["us-east5-a\n"], "zone", True, '"us-east5-a\\n" is not a zone'),
        ("proj", "project", False, "not a project ID"),
        ("project-", "project", False, "not a project ID"),
        (5, "project", False, "not a project ID"),
        ("nowhere", "zone", False, "not a zone"),
        ("good-one,../x", "project", True, '"../x" is not a project ID'),
        ({"a": 1}, "zone", True, "not a list"),
        (["us-east5-a", 5], "zone", True, "5 is not a zone"),
    ],
)
def test_gcp_names_refused(value: Any, kind: str, many: bool, reason: str) -> None:
    assert_refusal(gcp_name_problem(value, "tpu_x", kind, many), "tpu_x", value, reason)


def test_run_ids() -> None:
    assert run_id_problem("20261123T143000Z-ab12", "tpu_logs_run") == ""
    for value in ("latest", "../../etc", "20261123T143000Z-ab12\n", 5):
        assert_refusal(run_id_problem(value, "tpu_logs_run"), "tpu_logs_run", value, "run id")


def test_logs_options_defaults_and_types(here: Path) -> None:
    got = logs_options({"tail": None, "fetch": None, "run": None, "dest": None})
    assert got["ok"], got
    assert (got["tail"], got["fetch"], got["run"]) == (0, True, "")
    assert got["dest"] == str(here / ".cache" / "runs")
    got = logs_options({"tail": "30", "fetch": "no", "run": "20261123T143000Z-ab12", "dest": "x"})
    assert got["ok"] and (got["tail"], got["fetch"], got["dest"]) == (30, False, str(here / "x"))


@pytest.mark.parametrize(
    ("raw", "name", "value"),
    [
        ({"tail": "-1"}, "tpu_logs_tail", "-1"),
        ({"tail": True}, "tpu_logs_tail", True),
        ({"fetch": "maybe"}, "tpu_logs_fetch", "maybe"),
        ({"run": "latest"}, "tpu_logs_run", "latest"),
        ({"dest": "/etc"}, "tpu_logs_dest", "/etc"),
        ({"dest": "etc/x"}, "tpu_logs_dest", "etc/x"),
    ],
)
def test_logs_options_refused(here: Path, raw: dict, name: str, value: Any) -> None:
    got = logs_options(raw)
    assert not got["ok"] and got["dest"] == ""
    assert_refusal(got["message"], name, value, "")


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"script": "linked/train.sh"}, ['tpu_run_script is "linked/train.sh"', "symbolic link"]),
        ({"script": "/etc/passwd"}, ['tpu_run_script is "/etc/passwd"', "system folder"]),
        ({"script": ["x.sh"]}, ['tpu_run_script is ["x.sh"]', "not a path"]),
        ({"cmd": "x", "megascale_port": "70000"}, ['tpu_run_megascale_port is "70000"']),
        ({"cmd": "x", "megascale_port": "8476"}, ["tpu_run_megascale_port is '8476'"]),
    ],
)
def test_run_options_local_script_and_port(here: Path, raw: dict, words: list[str]) -> None:
    got = run_options(raw)
    assert not got["ok"]
    for word in words:
        assert word in got["message"], got["message"]
    assert run_options({"script": "proj/train.sh"})["script"] == str(here / "proj" / "train.sh")


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"src": "linked"}, ['tpu_sync_src is "linked"', "symbolic link"]),
        ({"src": "/etc"}, ['tpu_sync_src is "/etc"', "system folder"]),
        ({"src": "/"}, ['tpu_sync_src is "/"', "system folder"]),
        ({"src": ["proj"]}, ['tpu_sync_src is ["proj"]', "not a path"]),
        ({"repo": ["x"]}, ['tpu_sync_repo is ["x"]', "not a string"]),
        ({"repo": "-u/x"}, ['tpu_sync_repo is "-u/x"', "allowed"]),
    ],
)
def test_sync_options_sources(here: Path, raw: dict, words: list[str]) -> None:
    got = sync_options(raw, "/home/tpu")
    assert not got["ok"]
    assert "cannot name the destination" not in got["message"], got["message"]
    for word in words:
        assert word in got["message"], got["message"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ({"src": "proj", "dest": "/home/tpu/.ssh"}, 'tpu_sync_dest is "/home/tpu/.ssh"'),
        ({"src": "proj", "dest": "/home/tpu/.config/x"}, 'tpu_sync_dest is "/home/tpu/.config/x"'),
        ({"src": ".ssh"}, 'tpu_sync_src is ".ssh"'),
        ({"repo": "https://example.org/me/.gnupg.git"}, "tpu_sync_repo is"),
    ],
)
def test_sync_options_refuse_the_homes_dot_folders(here: Path, raw: dict, shown: str) -> None:
    (here / ".ssh").mkdir(exist_ok=True)
    got = sync_options({"delete": "true", **raw}, "/home/tpu")
    assert not got["ok"] and got["dest"] == "", got
    assert shown in got["message"], got["message"]
    assert "dot-folder of the login home" in got["message"], got["message"]
    assert "allowed:" in got["message"], got["message"]


def test_sync_options_keep_dots_that_are_not_the_homes_folders(here: Path) -> None:
    for dest in ("/home/tpu/proj/.cache", "/home/tpu/my.proj", "/opt/.hidden"):
        got = sync_options({"src": "proj", "dest": dest}, "/home/tpu")
        assert got["ok"] and got["dest"] == dest, got


def test_babysit_log_dir(here: Path) -> None:
    got = babysit_options({"log_dir": "/etc"})
    assert not got["ok"] and 'tpu_babysit_log_dir is "/etc"' in got["message"], got
    got = babysit_options({"log_dir": "etc/babysit"})
    assert not got["ok"] and "symbolic link" in got["message"], got
    assert babysit_options({"log_dir": "logs"})["log_dir"] == str(here / "logs")


def test_bounds_are_written_out() -> None:
    message = number_problem("0", "tpu_run_timeout", 1, 30 * 86400)
    assert message.endswith("allowed: a whole number from 1 to 2592000."), message
    assert "from 0.05 to 3600" in number_problem("0", "x", 0.05, 3600, integer=False)
