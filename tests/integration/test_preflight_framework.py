"""cloudtpu.pod.framework refuses bad input before any change, naming the variable and value.

Runs the role in check mode on the control machine (tests/role_runner.py) against a venv path
that does not exist, so that nothing could be installed even if a case slipped through; either
the role's argument spec or its preflight refuses each case.
"""

from __future__ import annotations

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON, error_text
from tests.role_runner import run_role

GOOD = {
    "tpu_venv_path": "/nonexistent/cloudtpu-check-venv",
    "tpu_login_user": "root",
    "tpu_framework_version": "0.10.2",
}

CASES = [
    # (variables, the variable the message must name, the bad value it must show)
    ({"tpu_framework_name": "tensorflow"}, "tpu_framework_name", "tensorflow"),
    ({"tpu_framework_version": "newest"}, "tpu_framework_version", "newest"),
    ({"tpu_framework_version": 0.4}, "tpu_framework_version", "0.4"),
    ({"tpu_framework_torch_version": "2.9 or later"}, "tpu_framework_torch_version", "2.9 or"),
    (
        {"tpu_framework_extra_requirements": ["flax", "--index-url=http://elsewhere/simple"]},
        "tpu_framework_extra_requirements",
        "--index-url=http://elsewhere/simple",
    ),
    (
        {"tpu_framework_extra_requirements": {"flax": "0.12"}},
        "tpu_framework_extra_requirements",
        "dict",
    ),
    (
        {"tpu_framework_requirements_file": "/nonexistent/requirements.txt"},
        "tpu_framework_requirements_file",
        "/nonexistent/requirements.txt",
    ),
    ({"tpu_venv_path": "venv310"}, "tpu_venv_path", "venv310"),
    ({"tpu_login_user": "nosuchuser-x9"}, "tpu_login_user", "nosuchuser-x9"),
    ({"tpu_framework_installer": "conda"}, "tpu_framework_installer", "conda"),
    (
        {"tpu_framework_index_url": "mirror.internal/simple"},
        "tpu_framework_index_url",
        "mirror.internal/simple",
    ),
    ({"tpu_framework_find_links": ["wheels/"]}, "tpu_framework_find_links", "wheels/"),
    ({"tpu_framework_ca_bundle": "ca.pem"}, "tpu_framework_ca_bundle", "ca.pem"),
    ({"tpu_framework_pod_cache_dir": "wheels"}, "tpu_framework_pod_cache_dir", "wheels"),
    (
        {"tpu_framework_pod_cache_dir": "/var/cache/../wheels"},
        "tpu_framework_pod_cache_dir",
        "/var/cache/../wheels",
    ),
    ({"tpu_framework_pod_cache_port": 80}, "tpu_framework_pod_cache_port", "80"),
    ({"tpu_framework_pod_cache_port": 70000}, "tpu_framework_pod_cache_port", "70000"),
    ({"tpu_framework_env": {"BAD-NAME": "x"}}, "tpu_framework_env", "BAD-NAME"),
    ({"tpu_framework_env": {"XLA_FLAGS": ["a"]}}, "tpu_framework_env", "XLA_FLAGS"),
    ({"tpu_framework_require_tpu": "sometimes"}, "tpu_framework_require_tpu", "sometimes"),
    ({"tpu_framework_check_timeout": 0}, "tpu_framework_check_timeout", "0"),
    ({"tpu_framework_check_timeout": "long"}, "tpu_framework_check_timeout", "long"),
    ({"tpu_framework_device_globs": ["accel*"]}, "tpu_framework_device_globs", "accel*"),
    ({"tpu_framework_uv_bin": "uv"}, "tpu_framework_uv_bin", "uv"),
]


@pytest.mark.parametrize(
    ("extra", "variable", "value"), CASES, ids=[f"{c[1]}={c[2]}" for c in CASES]
)
def test_bad_input_is_refused(extra, variable, value):
    result = run_role("framework", {**GOOD, **extra}, hostvars=LOCAL_PYTHON)
    out = result.stdout + result.stderr
    error = error_text(out) or out
    assert result.returncode != 0, f"accepted {extra}:\n{out[-3000:]}"
    assert variable in error, f"the error does not name {variable}:\n{error[-3000:]}"
    assert value in error, f"the error does not show the value {value!r}:\n{error[-3000:]}"
    for task in ("Ask the package index", "Compare the venv", "Install the framework"):
        assert f"cloudtpu.pod.framework : {task}" not in out, f"{task} ran:\n{out[-3000:]}"


@pytest.mark.parametrize("require", ["auto", True, False, "true", "false"])
def test_good_input_passes_in_check_mode(require):
    """Without a bad value the run gets through preflight; a missing venv is only noted."""
    result = run_role(
        "framework", {**GOOD, "tpu_framework_require_tpu": require}, hostvars=LOCAL_PYTHON
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "nothing to compare" in out, out[-3000:]
