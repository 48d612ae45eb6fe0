"""What converge (base, tcmalloc in mode disable, libtpu) leaves on an old TPU VM image."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import (
    DEVICE,
    LIBRARY,
    LOCK,
    LOGIN_SHELL_ENV,
    LOGS,
    MARKER,
    PRELOADS,
    changed_count,
    changed_tasks,
    converge,
    login,
)

# Without --device-glob tpu-unlock watches /dev/accel* and /dev/vfio/[0-9]*.
UNLOCK = "tpu-unlock --json"
# The package tpu-unlock runs, in the role's files and where the role installs it.
PACKAGE = Path(__file__).resolve().parents[3] / "roles" / "libtpu" / "files" / "tpu_unlock"
PACKAGE_DIR = "/usr/local/lib/cloudtpu/tpu_unlock"
TPU_UNLOCK_RECORD = "/var/lib/cloudtpu/state/libtpu.json"
PACKAGE_FILES = sorted(path.name for path in PACKAGE.glob("*.py"))


# --- tcmalloc: mode disable -------------------------------------------------------------------


def test_new_login_session_has_no_ld_preload(host) -> None:
    env = login(host, "env")
    assert "LD_PRELOAD" not in env, f"a new login session still preloads:\n{env}"


def test_new_login_shell_has_no_ld_preload(host) -> None:
    env = login(host, LOGIN_SHELL_ENV)
    assert "LD_PRELOAD" not in env, f"/etc/profile.d still preloads:\n{env}"


def test_new_programs_do_not_map_tcmalloc(host) -> None:
    maps = login(host, "cat /proc/self/maps")
    assert "libtcmalloc" not in maps, host.file("/etc/ld.so.preload").content_string


@pytest.mark.parametrize(("path", "line", "kind"), PRELOADS, ids=[p[2] for p in PRELOADS])
def test_each_preload_is_taken_out(host, path: str, line: str, kind: str) -> None:
    lines = host.file(path).content_string.splitlines()
    assert line not in lines, lines
    if kind == "environment":
        assert MARKER + line in lines, lines
    elif kind == "shell":  # ": " keeps the if block around the line valid shell
        assert ": " + MARKER + line in lines, lines
        check = host.run(f"sh -n {path}")
        assert check.rc == 0, check.stderr
    else:  # the dynamic loader has no comments: the entry is gone
        assert not any("tcmalloc" in entry for entry in lines), lines


def test_backup_keeps_the_original_lines(host) -> None:
    content = host.file("/etc/cloudtpu/tcmalloc.orig").content_string
    entries = [json.loads(line) for line in content.splitlines() if line.startswith("{")]
    expected = [{"file": path, "kind": kind, "line": line} for path, line, kind in PRELOADS]
    assert entries == expected, content


@pytest.mark.parametrize(
    "path",
    ["/etc/cloudtpu/tcmalloc.env"],
)
def test_no_framework_files_in_disable_mode(host, path: str) -> None:
    assert not host.file(path).exists, host.file(path).content_string


def test_venv_activate_has_no_preload(host) -> None:
    activate = host.file("/home/tpu/.venv310/bin/activate").content_string
    assert "cloudtpu.pod tcmalloc" not in activate and LIBRARY not in activate


# --- libtpu -----------------------------------------------------------------------------------


def test_tpu_unlock_is_installed(host) -> None:
    tool = host.file("/usr/local/bin/tpu-unlock")
    assert tool.exists and tool.user == "root" and tool.mode == 0o755, (tool.user, oct(tool.mode))
    # its package: root's alone, as the tool runs as root
    for folder in (PACKAGE_DIR.rsplit("/", 1)[0], PACKAGE_DIR):
        found = host.file(folder)
        assert found.is_directory and (found.user, found.group) == ("root", "root"), folder
        assert found.mode == 0o755, (folder, oct(found.mode))
    for name in PACKAGE_FILES:
        part = host.file(f"{PACKAGE_DIR}/{name}")
        assert (part.user, part.group, part.mode) == ("root", "root", 0o644), (name, oct(part.mode))
        assert part.sha256sum == hashlib.sha256((PACKAGE / name).read_bytes()).hexdigest(), name


@pytest.mark.parametrize("path", [LOCK, LOGS])
def test_stale_libtpu_leftovers_are_gone(host, path: str) -> None:
    assert not host.file(path).exists, host.run(f"ls -la {path}").stdout


def test_tpu_unlock_keeps_the_lock_while_a_process_holds_a_device(host, device_holder) -> None:
    result = host.run(UNLOCK)
    out = json.loads(result.stdout)
    assert result.rc == 3, out
    assert host.file(LOCK).exists, out
    holders = {h["pid"]: h for h in out["holders"]}
    assert device_holder in holders, out
    assert holders[device_holder]["user"] == "tpu", out
    assert holders[device_holder]["holds"] == [DEVICE], out
    assert holders[device_holder]["command"].startswith("python3 -c import time"), out
    assert LOCK in out["kept"], out


def test_tpu_unlock_kill_ends_the_holder_then_removes_the_lock(host, device_holder) -> None:
    result = host.run(f"{UNLOCK} --kill --user tpu --grace 3")
    out = json.loads(result.stdout)
    assert result.rc == 0, out
    assert [k["pid"] for k in out["killed"]] == [device_holder], out
    assert LOCK in out["removed"], out
    assert not host.file(LOCK).exists
    assert host.run(f"kill -0 {device_holder}").rc != 0, "the holder is still alive"


def _installed_again(result) -> bool:
    """The include of libtpu's install ran: the worker differed from the record."""
    lines = result.stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("TASK [cloudtpu.pod.libtpu : Install tpu-unlock where"):
            return not any(later.startswith("skipping:") for later in lines[index + 1 : index + 4])
    raise AssertionError(f"no install include in:\n{result.stdout[-3000:]}")


def test_the_record_names_every_part_of_tpu_unlock(host) -> None:
    record = json.loads(host.run_test(f"cat {TPU_UNLOCK_RECORD}").stdout)
    parts = {f"{PACKAGE_DIR}/{name}" for name in PACKAGE_FILES}
    assert parts | {PACKAGE_DIR, "/usr/local/bin/tpu-unlock"} <= set(record["paths"]), record
    assert record["paths"][f"{PACKAGE_DIR}/cli.py"]["kind"] == "file", record


def test_a_changed_or_missing_part_of_tpu_unlock_is_reinstalled(host) -> None:
    host.run_test(f"rm {PACKAGE_DIR}/holders.py && echo '# edited' >> {PACKAGE_DIR}/cli.py")
    host.run_test(f"chmod 0777 {PACKAGE_DIR}")
    repaired = converge("libtpu")
    assert _installed_again(repaired)
    assert "Install tpu-unlock in" in "\n".join(changed_tasks(repaired)), changed_tasks(repaired)
    for name in ("holders.py", "cli.py"):
        part = host.file(f"{PACKAGE_DIR}/{name}")
        assert part.sha256sum == hashlib.sha256((PACKAGE / name).read_bytes()).hexdigest(), name
    assert host.file(PACKAGE_DIR).mode == 0o755
    assert host.run(UNLOCK).rc == 0
    again = converge("libtpu")
    assert changed_count(again) == 0, changed_tasks(again)
    assert not _installed_again(again)


# --- base -------------------------------------------------------------------------------------


@pytest.mark.parametrize("package", ["htop", "git", "curl", "rsync", "lsof", "zsh", "tzdata"])
def test_packages_are_installed(host, package: str) -> None:
    assert host.package(package).is_installed, host.run(f"dpkg -s {package}").stdout


def test_unattended_upgrades_never_reboot(host) -> None:
    dump = host.run_test("apt-config dump Unattended-Upgrade::Automatic-Reboot").stdout
    assert dump.strip() == 'Unattended-Upgrade::Automatic-Reboot "false";', dump


def test_unattended_upgrades_stays_enabled(host) -> None:
    service = host.service("unattended-upgrades")
    assert service.is_enabled, host.run("systemctl status unattended-upgrades").stdout
    dump = host.run_test("apt-config dump APT::Periodic::Unattended-Upgrade").stdout
    assert '"0"' not in dump, dump


def test_time_zone(host) -> None:
    assert host.file("/etc/localtime").linked_to == "/usr/share/zoneinfo/Europe/Berlin"
    zone = login(host, "date +%Z").strip()
    assert zone in {"CET", "CEST"}, zone


def test_login_shell(host) -> None:
    assert host.user("tpu").shell == "/usr/bin/zsh"
    shell = login(host, "echo $0").strip()
    assert shell.endswith("zsh"), shell


@pytest.mark.parametrize("flag", ["-Sn", "-Hn"])
def test_open_files_limit_in_a_login_session(host, flag: str) -> None:
    limit = login(host, f"ulimit {flag}").strip()
    assert limit == "16384", (
        limit,
        host.file("/etc/security/limits.d/90-cloudtpu-nofile.conf").content_string,
    )
