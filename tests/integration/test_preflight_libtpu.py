"""cloudtpu.pod.libtpu: sane values pass its preflight.

The bad values themselves are in the bad-input table (test_bad_input_roles.py), all refused in
one run of the role; this checks that good values get through the same checks.
"""

from __future__ import annotations

from tests.preflight import run_role


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
