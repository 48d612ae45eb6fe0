"""cloudtpu.pod.tcmalloc refuses bad values in preflight, naming the variable and the value."""

from __future__ import annotations

import pytest

from tests.preflight import assert_refused, run_role

CASES = [
    ("tpu_tcmalloc_mode", "off", "off"),
    ("tpu_tcmalloc_mode", "Disable", "Disable"),
    ("tpu_tcmalloc_mode", True, "True"),
    ("tpu_login_user", "Bad User", "Bad User"),
    ("tpu_login_user", "x" * 40, "x" * 40),
    ("tpu_venv_path", ".venv310", ".venv310"),
    ("tpu_venv_path", "~/.venv310", "~/.venv310"),
    ("tpu_venv_path", "/home/tpu/../root/.venv", "/home/tpu/../root/.venv"),
    ("tpu_tcmalloc_library", "libtcmalloc.so.4", "libtcmalloc.so.4"),
    ("tpu_tcmalloc_library", "/usr/lib/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"),
    ("tpu_tcmalloc_library", ["/usr/lib/libtcmalloc.so.4"], "/usr/lib/libtcmalloc.so.4"),
]


@pytest.mark.parametrize(
    ("variable", "value", "shown"),
    CASES,
    ids=[f"{variable}={str(value)[:24]!r}" for variable, value, _ in CASES],
)
def test_bad_value_is_refused(variable: str, value: object, shown: str) -> None:
    assert_refused("tcmalloc", variable, value, shown)


def test_framework_mode_without_the_venv_changes_nothing() -> None:
    """A venv that does not exist: refused before anything changes (not in check mode)."""
    result = run_role(
        "tcmalloc",
        {
            "tpu_tcmalloc_mode": "framework",
            "tpu_venv_path": "/nonexistent/cloudtpu-test/.venv310",
        },
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "tpu_tcmalloc_mode is framework but the venv" in output, output[-3000:]
    assert "/nonexistent/cloudtpu-test/.venv310" in output, output[-3000:]
    assert not [ln for ln in output.splitlines() if ln.startswith("changed:")], output[-3000:]
