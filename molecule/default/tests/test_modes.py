"""The other modes, on the same worker after test_default.py: re-converge and check each.

1. tcmalloc framework + base unattended-upgrades disable: the login session has no
   LD_PRELOAD, the activated venv has it, the periodic apt runs are off; a second run changes
   nothing.
2. tcmalloc restore + base no_reboot (the default): the original /etc/environment line is
   back (a login session preloads TCMalloc again), the framework files and the backup are
   gone, the periodic apt runs are on again; a second restore changes nothing.
Only the roles concerned run (converge.yml's role tags).
"""

from __future__ import annotations

import pytest
from conftest import (
    LIBRARY,
    LOGIN_SHELL_ENV,
    MARKER,
    ORIGINAL_LINE,
    PRELOADS,
    changed_count,
    changed_tasks,
    converge,
    login,
    su_login,
)

ACTIVATE = "/home/tpu/.venv310/bin/activate"


@pytest.fixture(scope="module")
def framework_runs():
    modes = {"tpu_tcmalloc_mode": "framework", "tpu_base_unattended_upgrades": "disable"}
    first = converge("base,tcmalloc", **modes)
    second = converge("base,tcmalloc", **modes)
    return first, second


@pytest.fixture(scope="module")
def restored(framework_runs):
    first = converge("base,tcmalloc", tpu_tcmalloc_mode="restore")
    second = converge("tcmalloc", tpu_tcmalloc_mode="restore")
    return first, second


# --- framework --------------------------------------------------------------------------------


def test_framework_run_changed_something(framework_runs) -> None:
    first, _ = framework_runs
    tasks = changed_tasks(first)
    assert any("Preload TCMalloc when the framework venv is activated" in t for t in tasks), tasks


def test_framework_second_run_changes_nothing(framework_runs) -> None:
    _, second = framework_runs
    assert changed_count(second) == 0, changed_tasks(second)


def test_framework_login_session_has_no_ld_preload(host, framework_runs) -> None:
    env = login(host, "env") + login(host, LOGIN_SHELL_ENV)
    assert "LD_PRELOAD" not in env, env


def test_framework_programs_outside_the_venv_do_not_map_tcmalloc(host, framework_runs) -> None:
    maps = login(host, "cat /proc/self/maps")
    assert "libtcmalloc" not in maps, maps[-1500:]


def test_framework_activated_venv_preloads_tcmalloc(host, framework_runs) -> None:
    preload = login(host, f". {ACTIVATE} && printenv LD_PRELOAD").strip()
    assert preload == LIBRARY, (preload, host.file(ACTIVATE).content_string[-800:])


def test_framework_activating_twice_preloads_once(host, framework_runs) -> None:
    preload = login(host, f". {ACTIVATE} && . {ACTIVATE} && printenv LD_PRELOAD").strip()
    assert preload == LIBRARY, preload


def test_framework_python_of_the_venv_has_tcmalloc_mapped(host, framework_runs) -> None:
    maps = login(host, f". {ACTIVATE} && python -c 'print(open(\"/proc/self/maps\").read())'")
    assert "libtcmalloc" in maps, maps[-1500:]


def test_framework_env_file(host, framework_runs) -> None:
    env_file = host.file("/etc/cloudtpu/tcmalloc.env")
    assert env_file.mode == 0o644 and env_file.user == "root", oct(env_file.mode)
    lines = [ln for ln in env_file.content_string.splitlines() if not ln.startswith("#")]
    assert lines == [f"LD_PRELOAD={LIBRARY}"], env_file.content_string
    preload = host.run_test(
        "set -a; . /etc/cloudtpu/tcmalloc.env; set +a; printenv LD_PRELOAD"
    ).stdout.strip()
    assert preload == LIBRARY, preload


def test_framework_keeps_the_global_line_disabled(host, framework_runs) -> None:
    content = host.file("/etc/environment").content_string
    assert MARKER + ORIGINAL_LINE in content.splitlines(), content


def test_disable_stops_periodic_apt_runs(host, framework_runs) -> None:
    dump = host.run_test("apt-config dump APT::Periodic").stdout
    assert 'APT::Periodic::Unattended-Upgrade "0";' in dump.splitlines(), dump
    assert 'APT::Periodic::Update-Package-Lists "0";' in dump.splitlines(), dump
    service = host.service("unattended-upgrades")
    assert not service.is_enabled, host.run("systemctl is-enabled unattended-upgrades").stdout


# --- restore ----------------------------------------------------------------------------------


def test_restore_second_run_changes_nothing(restored) -> None:
    _, second = restored
    assert changed_count(second) == 0, changed_tasks(second)


@pytest.mark.parametrize(("path", "line", "kind"), PRELOADS, ids=[p[2] for p in PRELOADS])
def test_restore_puts_each_original_line_back(host, restored, path: str, line: str, kind) -> None:
    lines = host.file(path).content_string.splitlines()
    assert line in lines, lines
    assert not any(MARKER in entry for entry in lines), lines


def test_restore_login_session_preloads_again(host, restored) -> None:
    env = su_login(host, "env").splitlines()
    assert f"LD_PRELOAD={LIBRARY}" in env, env


def test_restore_login_shell_preloads_again(host, restored) -> None:
    env = su_login(host, LOGIN_SHELL_ENV).splitlines()
    assert f"LD_PRELOAD={LIBRARY}" in env, env


def test_restore_programs_map_tcmalloc_again(host, restored) -> None:
    maps = host.run_test("env -u LD_PRELOAD cat /proc/self/maps").stdout
    assert "libtcmalloc" in maps, host.file("/etc/ld.so.preload").content_string


@pytest.mark.parametrize("path", ["/etc/cloudtpu/tcmalloc.orig", "/etc/cloudtpu/tcmalloc.env"])
def test_restore_removes_the_role_files(host, restored, path: str) -> None:
    assert not host.file(path).exists, host.file(path).content_string


def test_restore_removes_the_venv_block(host, restored) -> None:
    activate = host.file(ACTIVATE).content_string
    assert "cloudtpu.pod tcmalloc" not in activate, activate[-800:]


def test_no_reboot_enables_periodic_apt_runs_again(host, restored) -> None:
    service = host.service("unattended-upgrades")
    assert service.is_enabled, host.run("systemctl is-enabled unattended-upgrades").stdout
    dump = host.run_test("apt-config dump APT::Periodic::Unattended-Upgrade").stdout
    assert '"0"' not in dump, dump
