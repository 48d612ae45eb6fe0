"""cloudtpu.pod.libtpu refuses bad values in preflight, naming the variable and the value."""

from __future__ import annotations

import pytest

from tests.preflight import assert_refused, run_role

CASES = [
    ("tpu_libtpu_device_glob", "accel*", '"accel*"'),
    ("tpu_libtpu_device_glob", "/tmp/accel*", '"/tmp/accel*"'),
    ("tpu_libtpu_device_glob", "/dev/../etc/*", '"/dev/../etc/*"'),
    ("tpu_libtpu_lock_files", ["tmp/libtpu_lockfile"], "tmp/libtpu_lockfile"),
    ("tpu_libtpu_lock_files", "/tmp/libtpu_lockfile", "/tmp/libtpu_lockfile"),
    ("tpu_libtpu_lock_files", [], "[]"),
    ("tpu_libtpu_log_dir", "/", '"/"'),
    ("tpu_libtpu_log_dir", "tpu_logs", "tpu_logs"),
    ("tpu_libtpu_log_dir", "/tmp/../etc", "/tmp/../etc"),
    ("tpu_libtpu_kill", "sometimes", "sometimes"),
    ("tpu_libtpu_kill_users", ["Alice Smith"], "Alice Smith"),
    ("tpu_libtpu_kill_users", ["root;reboot"], "root;reboot"),
    ("tpu_libtpu_kill_users", "tpu", "tpu"),
    ("tpu_libtpu_kill_grace", -1, "-1"),
    ("tpu_libtpu_kill_grace", "soon", "soon"),
    ("tpu_libtpu_kill_grace", 7200, "7200"),
    ("tpu_libtpu_kill_grace", True, "true"),
    ("tpu_libtpu_lock_files", ["/etc/passwd"], "/etc/passwd"),
    ("tpu_libtpu_lock_files", ["/var/tmp/libtpu_lockfile"], "/var/tmp/libtpu_lockfile"),
    ("tpu_libtpu_lock_files", ["/tmp/ssh-agent.sock"], "ssh-agent.sock"),
    ("tpu_libtpu_log_dir", "/etc/tpu_logs", "/etc/tpu_logs"),
    ("tpu_libtpu_log_dir", "/tmp/run", "/tmp/run"),
    ("tpu_libtpu_log_dir", "/tmp", '"/tmp"'),
]


@pytest.mark.parametrize(
    ("variable", "value", "shown"),
    CASES,
    ids=[f"{variable}={value!r}" for variable, value, _ in CASES],
)
def test_bad_value_is_refused(variable: str, value: object, shown: str) -> None:
    assert_refused("libtpu", variable, value, shown)


def test_good_values_pass_preflight() -> None:
    """The same checks let sane values through (check mode, nothing changes here)."""
    result = run_role(
        "libtpu",
        {
            "tpu_libtpu_device_glob": "/dev/vfio/[0-9]*",
            "tpu_libtpu_kill": "true",
            "tpu_libtpu_kill_users": ["tpu", "1001"],
            "tpu_libtpu_kill_grace": "30",
            "tpu_libtpu_run": False,
        },
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
