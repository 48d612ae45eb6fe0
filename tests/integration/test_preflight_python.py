"""cloudtpu.pod.python: good input passes its preflight in check mode.

The bad values themselves are in the bad-input table (test_bad_input_roles.py), all refused in
one run of the role; this checks that good values get through to the venv task.
"""

from __future__ import annotations

import subprocess

from tests.integration.playbook_helpers import LOCAL_PYTHON
from tests.role_runner import run_role


def _system_python() -> str:
    """major.minor of the control machine's own python3, which its distribution ships."""
    out = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


# A version this control machine ships, so that only the bad variable can fail.
GOOD = {"tpu_python_version": _system_python(), "tpu_login_user": "root"}


def test_good_input_passes_in_check_mode():
    """The same run without a bad value gets through preflight (the table's refusals are real)."""
    result = run_role(
        "python",
        {**GOOD, "tpu_venv_path": "/opt/cloudtpu-check-nonexistent/venv"},
        hostvars=LOCAL_PYTHON,
    )
    out = result.stdout + result.stderr
    assert "Check that the wanted Python has a source here" in out, out[-3000:]
    assert "cloudtpu.pod.python : Create the venv with" in out, out[-3000:]
