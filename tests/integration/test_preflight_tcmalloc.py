"""cloudtpu.pod.tcmalloc: a missing venv in framework mode is refused before anything changes.

The bad values themselves are in the bad-input table (test_bad_input_roles.py), all refused in
one run of the role; this is the case that needs a real (not check mode) run.
"""

from __future__ import annotations

from tests.preflight import run_role


def test_framework_mode_without_the_venv_changes_nothing() -> None:
    """A venv that does not exist: refused before anything changes (not in check mode)."""
    result = run_role(
        "tcmalloc",
        {
            "tpu_tcmalloc_mode": "framework",
            "tpu_venv_path": "/opt/cloudtpu-test-nonexistent/.venv310",
        },
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "tpu_tcmalloc_mode is framework but the venv" in output, output[-3000:]
    assert "/opt/cloudtpu-test-nonexistent/.venv310" in output, output[-3000:]
    assert not [ln for ln in output.splitlines() if ln.startswith("changed:")], output[-3000:]
