"""cloudtpu.pod.base refuses bad values in preflight, naming the variable and the value."""

from __future__ import annotations

import pytest

from tests.preflight import assert_refused

CASES = [
    ("tpu_login_user", "Bad User", "Bad User"),
    ("tpu_base_apt_lock_timeout", -5, "-5"),
    ("tpu_base_apt_lock_timeout", 99999, "99999"),
    ("tpu_base_apt_cache_valid_time", "hourly", "hourly"),
    ("tpu_base_apt_retries", 500, "500"),
    ("tpu_base_unattended_upgrades", "off", "off"),
    ("tpu_base_packages", "htop git", "htop git"),
    ("tpu_base_packages", ["htop; rm -rf /"], "htop; rm -rf /"),
    ("tpu_base_packages_extra", ["Zsh"], "Zsh"),
    ("tpu_base_timezone", "Europe/../etc/passwd", "Europe/../etc/passwd"),
    ("tpu_base_timezone", "Berlin time", "Berlin time"),
    ("tpu_base_user_shell", "zsh", "zsh"),
    ("tpu_base_user_shell", "/bin/../tmp/sh", "/bin/../tmp/sh"),
    ("tpu_base_nofile", 100, "100"),
    ("tpu_base_nofile", 4194304, "4194304"),
    ("tpu_base_nofile", "unlimited", "unlimited"),
]


@pytest.mark.parametrize(
    ("variable", "value", "shown"),
    CASES,
    ids=[f"{variable}={value!r}" for variable, value, _ in CASES],
)
def test_bad_value_is_refused(variable: str, value: object, shown: str) -> None:
    assert_refused("base", variable, value, shown)
