"""The bad-input table of the roles that install the worker's software: apt (the shared step on
its own), base, python, framework, tcmalloc and libtpu; every case refused before anything
changes. The roles that serve or reach the network (remote_shell, nfs, storage) are
test_bad_input_roles_network.py.

One ansible-playbook run per role (tests/bad_input.py): each case is its own inventory host on
the control machine, with the bad variables as host variables, and the role runs in check mode
over all of them. Every host must fail in the role's argument spec or preflight.yml, with no
task changed before, and the message must name the variable, show the value and say what is
allowed. Check mode is the mode these runs use, so "--check fails in preflight too" is what is
tested here.
"""

from __future__ import annotations

import pytest

from tests.bad_input import (
    SYSTEM_PATHS,
    Case,
    RoleRuns,
    RoleTable,
    assert_big_enough,
    case_ids,
    table_cases,
    v,
)
from tests.integration.playbook_helpers import system_python

BASE = [
    v("login-user-space", "tpu_login_user", "Bad User"),
    v("login-user-newline", "tpu_login_user", "tpu\n", "tpu"),
    v("login-home-etc", "tpu_login_home", "/etc"),
    v("login-home-tmp", "tpu_login_home", "/tmp"),
    v("login-home-relative", "tpu_login_home", "home/tpu"),
    v("login-home-dotdot", "tpu_login_home", "/home/../etc"),
    v("lock-negative", "tpu_base_apt_lock_timeout", -5),
    v("lock-huge", "tpu_base_apt_lock_timeout", 99999),
    v("lock-word", "tpu_base_apt_lock_timeout", "abc"),
    v("cache-word", "tpu_base_apt_cache_valid_time", "hourly"),
    v("retries-big", "tpu_base_apt_retries", 500),
    v("retries-negative", "tpu_base_apt_retries", -1),
    v("retries-word", "tpu_base_apt_retries", "abc"),
    v("upgrades-off", "tpu_base_unattended_upgrades", "off"),
    v("packages-string", "tpu_base_packages", "htop git"),
    v("packages-shell", "tpu_base_packages", ["htop; rm -rf /"], "htop; rm -rf /"),
    v("packages-upper", "tpu_base_packages_extra", ["Zsh"], "Zsh"),
    v("tz-dotdot", "tpu_base_timezone", "Europe/../etc/passwd"),
    v("tz-space", "tpu_base_timezone", "Berlin time"),
    v("tz-newline", "tpu_base_timezone", "Etc/UTC\n", "Etc/UTC"),  # a check matches in full
    v("packages-newline", "tpu_base_packages_extra", ["htop\n"], "htop"),
    v("shell-relative", "tpu_base_user_shell", "zsh"),
    v("shell-dotdot", "tpu_base_user_shell", "/bin/../tmp/sh"),
    v("nofile-small", "tpu_base_nofile", 100),
    v("nofile-big", "tpu_base_nofile", 4194304),
    v("nofile-word", "tpu_base_nofile", "unlimited"),
]

PYTHON_GOOD = {"tpu_python_version": system_python(), "tpu_login_user": "root"}
PYTHON = [
    v("version-letter-o", "tpu_python_version", "3.1O"),
    v("version-float", "tpu_python_version", 3.1),
    v("version-name", "tpu_python_version", "python3.10"),
    v("source", "tpu_python_source", "conda"),
    v("installer", "tpu_python_installer", "poetry"),
    v("venv-relative", "tpu_venv_path", "venvs/tpu"),
    v("venv-tilde", "tpu_venv_path", "~/../other/venv"),
    *[v(f"venv-system-{i}", "tpu_venv_path", path, path) for i, path in enumerate(SYSTEM_PATHS)],
    v("venv-outside", "tpu_venv_path", "/srv/venv"),
    v("login-user-space", "tpu_login_user", "Bad User"),
    v("login-user-missing", "tpu_login_user", "nosuchuser-x9"),
    v("activate-maybe", "tpu_python_venv_activate_on_login", "maybe"),
    v("login-file-abs", "tpu_python_venv_login_file", "/etc/profile"),
    v("uv-version", "tpu_python_uv_version", "latest"),
    v("uv-dir-etc", "tpu_python_uv_dir", "/etc/uv"),
    v("uv-dir-tmp", "tpu_python_uv_dir", "/tmp/uv"),
    v("uv-dir-opt", "tpu_python_uv_dir", "/opt"),
    v("uv-link-bin", "tpu_python_uv_link", "/usr/bin/uv"),
    v("uv-link-python3", "tpu_python_uv_link", "/usr/local/bin/python3"),
    v("uv-link-sudo", "tpu_python_uv_link", "/usr/local/bin/sudo"),
    v("apt-retries-word", "tpu_python_apt_retries", "many"),
    v("apt-retries-negative", "tpu_python_apt_retries", -1),
    v("apt-retries-big", "tpu_python_apt_retries", 101),
    v("apt-lock-big", "tpu_python_apt_lock_timeout", 3601),
    v("apt-lock-zero-word", "tpu_python_apt_lock_timeout", "zero"),
    v("ca-relative", "tpu_python_ca_bundle", "certs/ca.pem"),
    v(
        "index-url-secret",
        "tpu_python_index_url",
        "mirror:s3cret-token@internal/simple",
        "",
        hides="s3cret-token",
    ),
    # the uv wheel's folder is deleted recursively on every host: only inside /var/cache/cloudtpu
    v("cache-dir-relative", "tpu_python_pod_cache_dir", "uv"),
    v("cache-dir-home", "tpu_python_pod_cache_dir", "/home/tpu"),
    v("cache-dir-itself", "tpu_python_pod_cache_dir", "/var/cache/cloudtpu"),
    v("cache-dir-dotdot", "tpu_python_pod_cache_dir", "/var/cache/cloudtpu/../../etc"),
    v("cache-maybe", "tpu_python_pod_cache", "maybe"),
    v("port-low", "tpu_python_pod_cache_port", 80),
    v("port-high", "tpu_python_pod_cache_port", 70000),
    v("port-word", "tpu_python_pod_cache_port", "abc"),
]

FRAMEWORK_GOOD = {
    "tpu_venv_path": "/opt/cloudtpu-check-nonexistent/venv",
    "tpu_login_user": "root",
    "tpu_framework_version": "0.10.2",
}
FRAMEWORK = [
    v("name", "tpu_framework_name", "tensorflow"),
    v("version-word", "tpu_framework_version", "newest"),
    v("version-float", "tpu_framework_version", 0.4),
    v("torch-version", "tpu_framework_torch_version", "2.9 or later", "2.9 or"),
    v(
        "extra-option",
        "tpu_framework_extra_requirements",
        ["flax", "--index-url=http://elsewhere/simple"],
        "--index-url=http://elsewhere/simple",
    ),
    v("extra-dict", "tpu_framework_extra_requirements", {"flax": "0.12"}, "dict"),
    v("requirements-missing", "tpu_framework_requirements_file", "/nonexistent/requirements.txt"),
    v("venv-relative", "tpu_venv_path", "venv310"),
    v("venv-outside", "tpu_venv_path", "/srv/venv"),  # the login contract's venv rule
    v("venv-var-run", "tpu_venv_path", "/var/run/venv"),
    v("login-user-missing", "tpu_login_user", "nosuchuser-x9"),
    v("installer", "tpu_framework_installer", "conda"),
    v(
        "index-url-secret",
        "tpu_framework_index_url",
        "mirror.internal/simple?token=s3cret",
        "",
        hides="s3cret",
    ),
    v(
        "extra-index-secret",
        "tpu_framework_extra_index_urls",
        ["ftp://me:s3cret@host/simple"],
        "",
        hides="s3cret",
    ),
    v("find-links-relative", "tpu_framework_find_links", ["wheels/"], ""),
    v("ca-relative", "tpu_framework_ca_bundle", "ca.pem"),
    v("cache-dir-relative", "tpu_framework_pod_cache_dir", "wheels"),
    v("cache-dir-dotdot", "tpu_framework_pod_cache_dir", "/var/cache/../wheels"),
    v("cache-dir-etc", "tpu_framework_pod_cache_dir", "/etc"),
    v("cache-dir-tmp", "tpu_framework_pod_cache_dir", "/tmp"),
    v("cache-dir-usr", "tpu_framework_pod_cache_dir", "/usr/share/wheels"),
    # the folder is deleted recursively on every host: only inside /var/cache/cloudtpu
    v("cache-dir-home", "tpu_framework_pod_cache_dir", "/home/tpu"),
    v("cache-dir-ssh", "tpu_framework_pod_cache_dir", "/home/tpu/.ssh"),
    v("cache-dir-nfs", "tpu_framework_pod_cache_dir", "/srv/nfs/shared"),
    v("cache-dir-docker", "tpu_framework_pod_cache_dir", "/var/lib/docker"),
    v("cache-dir-itself", "tpu_framework_pod_cache_dir", "/var/cache/cloudtpu"),
    v("cache-maybe", "tpu_framework_pod_cache", "maybe"),
    v("tpu-info-maybe", "tpu_framework_tpu_info", "maybe"),
    v("port-low", "tpu_framework_pod_cache_port", 80),
    v("port-high", "tpu_framework_pod_cache_port", 70000),
    v("port-zero", "tpu_framework_pod_cache_port", 0),
    v("port-word", "tpu_framework_pod_cache_port", "abc"),
    v("env-key", "tpu_framework_env", {"BAD-NAME": "x"}, "BAD-NAME"),
    v("env-list-secret", "tpu_framework_env", {"HF_TOKEN": ["s3cret"]}, "HF_TOKEN", hides="s3cret"),
    v("require-maybe", "tpu_framework_require_tpu", "maybe"),
    v("check-timeout-zero", "tpu_framework_check_timeout", 0),
    v("check-timeout-negative", "tpu_framework_check_timeout", -1),
    v("check-timeout-word", "tpu_framework_check_timeout", "long"),
    v("device-glob-relative", "tpu_framework_device_globs", ["accel*"], "accel*"),
    v("device-glob-all", "tpu_framework_device_globs", ["/dev/*"], "/dev/*"),
    v("device-glob-fuse", "tpu_framework_device_globs", ["/dev/accel*", "/dev/fuse"], "/dev/fuse"),
    v("uv-bin-relative", "tpu_framework_uv_bin", "uv"),
    v("uv-bin-etc", "tpu_framework_uv_bin", "/etc/uv"),
]

TCMALLOC = [
    v("mode-off", "tpu_tcmalloc_mode", "off"),
    v("mode-case", "tpu_tcmalloc_mode", "Disable"),
    v("mode-bool", "tpu_tcmalloc_mode", True),
    v("login-user-space", "tpu_login_user", "Bad User"),
    v("login-user-long", "tpu_login_user", "x" * 40, "x" * 40),
    v("venv-relative", "tpu_venv_path", ".venv310"),
    v("venv-tilde", "tpu_venv_path", "~/.venv310"),
    v("venv-dotdot", "tpu_venv_path", "/home/tpu/../root/.venv"),
    v("venv-outside", "tpu_venv_path", "/data/venv"),
    v("venv-spool", "tpu_venv_path", "/var/spool/venv"),
    v("library-relative", "tpu_tcmalloc_library", "libtcmalloc.so.4"),
    v("library-other", "tpu_tcmalloc_library", "/usr/lib/libjemalloc.so.2"),
    v(
        "library-list",
        "tpu_tcmalloc_library",
        ["/usr/lib/libtcmalloc.so.4"],
        "/usr/lib/libtcmalloc.so.4",
    ),
    v("library-dotdot", "tpu_tcmalloc_library", "/usr/lib/../../tmp/libtcmalloc.so"),
]

LIBTPU = [
    v("glob-relative", "tpu_libtpu_device_glob", "accel*"),
    v("glob-tmp", "tpu_libtpu_device_glob", "/tmp/accel*"),
    v("glob-dotdot", "tpu_libtpu_device_glob", "/dev/../etc/*"),
    v("glob-all-devices", "tpu_libtpu_device_glob", "/dev/*"),
    v("glob-fuse", "tpu_libtpu_device_glob", "/dev/fuse"),
    v("glob-input", "tpu_libtpu_device_glob", "/dev/input/*"),
    v("glob-vfio-all", "tpu_libtpu_device_glob", "/dev/vfio/*"),
    v("locks-relative", "tpu_libtpu_lock_files", ["tmp/libtpu_lockfile"], "tmp/libtpu_lockfile"),
    v("locks-string", "tpu_libtpu_lock_files", "/tmp/libtpu_lockfile"),
    v("locks-empty", "tpu_libtpu_lock_files", []),
    v("locks-passwd", "tpu_libtpu_lock_files", ["/etc/passwd"], "/etc/passwd"),
    v(
        "locks-var-tmp",
        "tpu_libtpu_lock_files",
        ["/var/tmp/libtpu_lockfile"],
        "/var/tmp/libtpu_lockfile",
    ),
    v("locks-socket", "tpu_libtpu_lock_files", ["/tmp/ssh-agent.sock"], "ssh-agent.sock"),
    v("log-root", "tpu_libtpu_log_dir", "/", '"/"'),
    v("log-relative", "tpu_libtpu_log_dir", "tpu_logs"),
    v("log-dotdot", "tpu_libtpu_log_dir", "/tmp/../etc"),
    v("log-etc", "tpu_libtpu_log_dir", "/etc/tpu_logs"),
    v("log-other-name", "tpu_libtpu_log_dir", "/tmp/run"),
    v("log-tmp", "tpu_libtpu_log_dir", "/tmp", '"/tmp"'),
    v("kill-maybe", "tpu_libtpu_kill", "maybe"),
    v("remove-logs-maybe", "tpu_libtpu_remove_logs", "maybe"),
    v("users-space", "tpu_libtpu_kill_users", ["Alice Smith"], "Alice Smith"),
    v("users-shell", "tpu_libtpu_kill_users", ["root;reboot"], "root;reboot"),
    v("users-newline", "tpu_libtpu_kill_users", ["tpu\n"], "tpu"),
    v("users-string", "tpu_libtpu_kill_users", "tpu"),
    v("grace-negative", "tpu_libtpu_kill_grace", -1),
    v("grace-word", "tpu_libtpu_kill_grace", "soon"),
    v("grace-big", "tpu_libtpu_kill_grace", 7200),
    v("grace-bool", "tpu_libtpu_kill_grace", True, "true"),
]

# The shared apt step used on its own (a play of another repository): its numbers are bounded
# as the roles that import it bound theirs.
APT = [
    v("apt-lock-huge", "tpu_apt_lock_timeout", 99999),
    v("apt-lock-negative", "tpu_apt_lock_timeout", -1),
    v("apt-cache-huge", "tpu_apt_cache_valid_time", 99999999999),
    v("apt-retries-big", "tpu_apt_retries", 500),
    v("apt-port-low", "tpu_apt_pod_cache_port", 80),
    v("apt-port-huge", "tpu_apt_pod_cache_port", 70000),
    v("apt-port-word", "tpu_apt_pod_cache_port", "http"),
]

TABLE: RoleTable = {
    "apt": (APT, {}, ("main.yml",)),
    "base": (BASE, {}, ("preflight.yml",)),
    "python": (PYTHON, PYTHON_GOOD, ("preflight.yml", "host.yml")),
    # the login user's passwd entry is the worker's to give: host.yml, before any change
    "framework": (FRAMEWORK, FRAMEWORK_GOOD, ("preflight.yml", "host.yml")),
    "tcmalloc": (TCMALLOC, {}, ("preflight.yml",)),
    "libtpu": (LIBTPU, {}, ("preflight.yml",)),
}
# The roles whose checks read facts (the distribution); the others run without gathering.
FACTS = ("python", "tcmalloc")
ALL = table_cases(TABLE)


def test_the_table_is_big_enough() -> None:
    assert_big_enough(ALL, 120)


@pytest.mark.parametrize(("role", "case"), ALL, ids=case_ids(ALL))
def test_bad_input_is_refused_before_any_change(refusals: RoleRuns, role: str, case: Case) -> None:
    refusals.assert_refused(role, case)
