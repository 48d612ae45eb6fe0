"""cloudtpu.pod.framework: good input passes its preflight in check mode.

The bad values themselves are in the bad-input table (test_bad_input_roles.py), all refused in
one run of the role; this checks that good values get through, with a venv that does not
exist yet.
"""

from __future__ import annotations

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON
from tests.role_runner import run_role

GOOD = {
    "tpu_venv_path": "/opt/cloudtpu-check-nonexistent/venv",
    "tpu_login_user": "root",
    "tpu_framework_version": "0.10.2",
}


@pytest.mark.parametrize("require", ["auto", True, False, "true", "false"])
def test_good_input_passes_in_check_mode(require):
    """Without a bad value the run gets through preflight; a missing venv is only noted."""
    result = run_role(
        "framework", {**GOOD, "tpu_framework_require_tpu": require}, hostvars=LOCAL_PYTHON
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "nothing to compare" in out, out[-3000:]
