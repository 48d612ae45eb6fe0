"""The converged fast path: what cloudtpu.pod.tpu_state records and looks at again
(module_utils/tpu_state.py), and the digest of a role's inputs (filter state_digest).
The module on workers, with drift repaired by the roles, is tests/integration/test_fast_path.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.state_digest import state_digest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_state

REPO = Path(__file__).resolve().parents[3]


def fake_run(stdout: str):
    calls = []

    def run(argv, env):
        calls.append(argv)
        return 0, stdout.encode()

    run.calls = calls
    return run


def local_run(argv: list[str], env: dict) -> tuple[int, bytes]:
    """What the module's runner (AnsibleModule.run_command) does, on this machine."""
    done = subprocess.run(argv, capture_output=True, env={**os.environ, **env}, check=False)
    return done.returncode, done.stdout


def test_a_path_is_seen_without_following_links(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("one\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link"
    link.symlink_to(target)
    seen = tpu_state.observe_path(str(target))
    assert seen["kind"] == "file" and seen["mode"] == "0o640"
    assert seen["sha256"] == "2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806"
    assert tpu_state.observe_path(str(link)) == {
        "kind": "link",
        "target": str(target),
        "uid": os.getuid(),
    }
    assert tpu_state.observe_path(str(tmp_path / "gone")) == {"kind": "absent"}
    assert tpu_state.observe_path(str(target / "below-a-file")) == {"kind": "absent"}
    assert tpu_state.observe_path(str(tmp_path))["kind"] == "directory"


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert tpu_state.observe_path(str(fifo))["kind"] == "other"


def test_each_drift_is_named() -> None:
    recorded = {
        "paths": {"/etc/a": {"kind": "file", "sha256": "1"}, "/etc/b": {"kind": "absent"}},
        "packages": {"mosh": "installed 1.4"},
        "units": {"x.timer": {"ActiveState": "active"}},
        "commands": [{"argv": ["true"], "user": "", "rc": 0, "sha256": "e3"}],
    }
    same = json.loads(json.dumps(recorded))
    assert tpu_state.differences(recorded, same) == []
    drift = json.loads(json.dumps(recorded))
    drift["paths"]["/etc/a"]["sha256"] = "2"
    drift["packages"]["mosh"] = "config-files 1.4"
    drift["units"]["x.timer"]["ActiveState"] = "inactive"
    drift["commands"][0]["sha256"] = "ff"
    drift["paths"]["/etc/new"] = {"kind": "absent"}
    found = tpu_state.differences(recorded, drift)
    assert len(found) == 5, found
    assert any(line.startswith("path /etc/a: was") for line in found)
    assert "path /etc/new: not in the record" in found
    assert any("mosh" in line and "config-files" in line for line in found)


def test_a_check_looks_at_the_record_and_its_own_items() -> None:
    record = {
        "paths": {"/etc/a": {}},
        "packages": {"python3.10": "installed 3.10"},
        "units": {},
        "commands": [{"argv": ["uv", "--version"], "user": "", "rc": 0}],
    }
    spec = {
        "paths": ["/etc/a", "/etc/b"],
        "commands": [{"argv": ["uv", "--version"]}, {"argv": ["id"], "user": "tpu"}],
    }
    merged = tpu_state.recorded_spec(record, spec)
    assert merged["paths"] == ["/etc/a", "/etc/b"]
    assert merged["packages"] == ["python3.10"]
    assert merged["commands"] == [
        {"argv": ["uv", "--version"], "user": ""},
        {"argv": ["id"], "user": "tpu"},
    ]


def test_packages_by_name_whatever_apt_spelling() -> None:
    run = fake_run("mosh\tinstalled 1.4.0\nlocales\tconfig-files 2.36\n")
    seen = tpu_state.observe_packages(["mosh=1.4.0", "locales", "byobu:amd64"], run=run)
    assert seen == {
        "mosh=1.4.0": "installed 1.4.0",
        "locales": "config-files 2.36",
        "byobu:amd64": "absent",
    }
    assert run.calls[0][-3:] == ["byobu", "locales", "mosh"]
    assert tpu_state.unhealthy({"packages": seen}) == [
        "package locales: config-files 2.36",
        "package byobu:amd64: absent",
    ]


def test_units_in_the_order_asked() -> None:
    out = (
        "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\n\n"
        "LoadState=not-found\nUnitFileState=\nActiveState=inactive\n"
    )
    seen = tpu_state.observe_units(["a.timer", "b.service"], run=fake_run(out))
    assert seen["a.timer"] == {
        "LoadState": "loaded",
        "UnitFileState": "enabled",
        "ActiveState": "active",
    }
    assert seen["b.service"]["LoadState"] == "not-found"


def test_a_command_is_seen_by_exit_code_and_output() -> None:
    seen = tpu_state.observe_command(["sh", "-c", "echo hi; exit 3"], "", local_run)
    assert seen["rc"] == 3 and seen["sha256"] == tpu_state.hashlib.sha256(b"hi\n").hexdigest()
    assert tpu_state.observe_command(["/nonexistent/binary"], "", local_run)["rc"] == 127
    assert tpu_state.observe_command(["true"], "no-such-user-here", local_run)["error"]
    assert tpu_state.command_argv(["id"], "tpu") == [
        "timeout",
        str(tpu_state.COMMAND_TIMEOUT),
        "runuser",
        "-u",
        "tpu",
        "--",
        "id",
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="runs a command as another user: needs root")
def test_a_command_runs_as_the_user_named() -> None:
    seen = tpu_state.observe_command(["id", "-u"], "nobody", local_run)
    expected = subprocess.run(["id", "-u", "nobody"], capture_output=True, check=True).stdout
    assert seen["sha256"] == tpu_state.hashlib.sha256(expected).hexdigest()


@pytest.mark.skipif(os.geteuid() != 0, reason="the record folder must be owned by root")
def test_the_record_is_root_only_and_replaced_whole(tmp_path: Path) -> None:
    state_dir = str(tmp_path / "lib" / "state")
    tpu_state.write_record("base", {"digest": "d1"}, state_dir)
    assert stat.S_IMODE(os.stat(state_dir).st_mode) == 0o700
    path = tpu_state.record_path("base", state_dir)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert tpu_state.read_record("base", state_dir)["digest"] == "d1"
    tpu_state.write_record("base", {"digest": "d2"}, state_dir)
    assert tpu_state.read_record("base", state_dir)["digest"] == "d2"
    assert os.listdir(state_dir) == ["base.json"]
    assert tpu_state.forget_record("base", state_dir) is True
    assert tpu_state.read_record("base", state_dir) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the record folder must be owned by root")
def test_a_record_that_cannot_be_trusted_is_refused(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    planted = tmp_path / "elsewhere.json"
    planted.write_text(json.dumps({"version": 1, "digest": "d"}))
    (state_dir / "base.json").symlink_to(planted)
    with pytest.raises(tpu_state.StateError):
        tpu_state.read_record("base", str(state_dir))
    (state_dir / "base.json").unlink()
    open_file = state_dir / "base.json"
    open_file.write_text(json.dumps({"version": 1, "digest": "d"}))
    os.chmod(open_file, 0o644)
    with pytest.raises(tpu_state.StateError, match="0600"):
        tpu_state.read_record("base", str(state_dir))
    writable = tmp_path / "writable"
    writable.mkdir()
    os.chmod(writable, os.stat(writable).st_mode | stat.S_IWGRP)  # group-writable: refused
    with pytest.raises(tpu_state.StateError, match="writable only by it"):
        tpu_state.write_record("base", {}, str(writable))


@pytest.mark.parametrize("role", ["../base", "Base", "a/b", ""])
def test_a_role_name_cannot_leave_the_record_folder(role: str) -> None:
    with pytest.raises(tpu_state.StateError):
        tpu_state.record_path(role)


def test_the_digest_follows_inputs_facts_and_code(tmp_path: Path) -> None:
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True)
    (tmp_path / "plugins").mkdir()
    (role / "tasks" / "main.yml").write_text("---\n")
    facts = {"distribution": "Ubuntu", "distribution_version": "22.04", "hostname": "w0"}
    first = state_digest({"a": 1, "b": ["x"]}, str(role), facts=facts, extra="tpu")
    assert first == state_digest({"b": ["x"], "a": 1}, str(role), facts=facts, extra="tpu")
    assert first == state_digest(
        {"a": 1, "b": ("x",)}, str(role), facts=dict(facts, hostname="w1"), extra="tpu"
    ), "a fact the role does not read changes nothing"
    assert first != state_digest({"a": 2, "b": ["x"]}, str(role), facts=facts, extra="tpu")
    assert first != state_digest({"a": 1, "b": ["x"]}, str(role), facts=facts, extra="other")
    assert first != state_digest(
        {"a": 1, "b": ["x"]},
        str(role),
        facts=dict(facts, distribution_version="24.04"),
        extra="tpu",
    )
    (role / "tasks" / "main.yml").write_text("---\n- name: changed\n")
    assert first != state_digest({"a": 1, "b": ["x"]}, str(role), facts=facts, extra="tpu")
    changed_role = state_digest({"a": 1, "b": ["x"]}, str(role), facts=facts, extra="tpu")
    (tmp_path / "plugins" / "filter.py").write_text("# a plugin\n")
    assert changed_role != state_digest({"a": 1, "b": ["x"]}, str(role), facts=facts, extra="tpu")


def test_a_role_digest_follows_the_other_roles_it_imports(tmp_path: Path) -> None:
    roles = tmp_path / "roles"
    for name in ("base", "apt"):
        (roles / name / "tasks").mkdir(parents=True)
        (roles / name / "tasks" / "main.yml").write_text("---\n")
    before = state_digest({}, str(roles / "base"))
    assert before != state_digest({}, str(roles / "apt")), "each role has a digest of its own"
    (roles / "apt" / "tasks" / "pod_cache.yml").write_text("---\n")
    assert before != state_digest({}, str(roles / "base"))


def test_the_collections_roles_digest_their_own_code() -> None:
    base = state_digest({}, str(REPO / "roles" / "base"))
    python = state_digest({}, str(REPO / "roles" / "python"))
    assert base != python
    assert len(base) == 64 and int(base, 16) >= 0
