"""cloudtpu.pod.python refuses bad input before it changes anything, naming the variable and value.

Runs the role in check mode on the control machine (tests/role_runner.py). Either the role's
argument spec or its preflight refuses each case; no apt, uv or venv task may run.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON, error_text
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

CASES = [
    # (variables, the variable the message must name, the bad value it must show)
    ({"tpu_python_version": "3.1O"}, "tpu_python_version", "3.1O"),
    ({"tpu_python_version": 3.1}, "tpu_python_version", "3.1"),
    ({"tpu_python_version": "python3.10"}, "tpu_python_version", "python3.10"),
    ({"tpu_python_source": "conda"}, "tpu_python_source", "conda"),
    ({"tpu_python_installer": "poetry"}, "tpu_python_installer", "poetry"),
    ({"tpu_venv_path": "venvs/tpu"}, "tpu_venv_path", "venvs/tpu"),
    ({"tpu_venv_path": "~/../other/venv"}, "tpu_venv_path", "~/../other/venv"),
    ({"tpu_login_user": "Bad User"}, "tpu_login_user", "Bad User"),
    ({"tpu_login_user": "nosuchuser-x9"}, "tpu_login_user", "nosuchuser-x9"),
    (
        {"tpu_python_venv_activate_on_login": "sometimes"},
        "tpu_python_venv_activate_on_login",
        "sometimes",
    ),
    ({"tpu_python_venv_login_file": "/etc/profile"}, "tpu_python_venv_login_file", "/etc/profile"),
    ({"tpu_python_uv_version": "latest"}, "tpu_python_uv_version", "latest"),
    ({"tpu_python_apt_retries": "many"}, "tpu_python_apt_retries", "many"),
    ({"tpu_python_ca_bundle": "certs/ca.pem"}, "tpu_python_ca_bundle", "certs/ca.pem"),
]


@pytest.mark.parametrize(
    ("extra", "variable", "value"), CASES, ids=[f"{c[1]}={c[2]}" for c in CASES]
)
def test_bad_input_is_refused(extra, variable, value):
    result = run_role("python", {**GOOD, **extra}, hostvars=LOCAL_PYTHON)
    out = result.stdout + result.stderr
    error = error_text(out) or out
    assert result.returncode != 0, f"accepted {extra}:\n{out[-3000:]}"
    assert variable in error, f"the error does not name {variable}:\n{error[-3000:]}"
    assert value in error, f"the error does not show the value {value!r}:\n{error[-3000:]}"
    # Refused before the first change: no install or venv task ran.
    for task in ("Install python", "Create the tool venv", "Create the venv"):
        assert f"cloudtpu.pod.python : {task}" not in out, f"{task} ran:\n{out[-3000:]}"


def test_good_input_passes_in_check_mode():
    """The same run without a bad value gets through preflight (the cases above are real)."""
    result = run_role(
        "python",
        {**GOOD, "tpu_venv_path": "/nonexistent/cloudtpu-check-venv"},
        hostvars=LOCAL_PYTHON,
    )
    out = result.stdout + result.stderr
    assert "Check that the wanted Python has a source here" in out, out[-3000:]
    assert "cloudtpu.pod.python : Create the venv with" in out, out[-3000:]
