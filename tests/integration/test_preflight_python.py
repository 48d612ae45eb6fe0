"""cloudtpu.pod.python: good input passes its preflight in check mode.

The bad values themselves are in the bad-input table (test_bad_input_roles.py), all refused in
one run of the role; this checks that good values get through to the venv task, and that what
is at tpu_python_uv_dir on the worker (here the control machine) is looked at before anything
changes: a folder that is not the role's tool venv is refused and left as it is.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON, system_python
from tests.role_runner import run_role

# A version this control machine ships, so that only the bad variable can fail.
GOOD = {"tpu_python_version": system_python(), "tpu_login_user": "root"}


def python_role(**values: str) -> tuple[int, str]:
    """The python role's run (tests/role_runner.py) on GOOD with a venv path that does not exist
    and ``values`` over them: its return code, its stdout and stderr."""
    variables = {**GOOD, "tpu_venv_path": "/opt/cloudtpu-check-nonexistent/venv", **values}
    result = run_role("python", variables, hostvars=LOCAL_PYTHON)
    return result.returncode, result.stdout + result.stderr


def test_good_input_passes_in_check_mode():
    """The same run without a bad value gets through preflight (the table's refusals are real)."""
    _, out = python_role()
    assert "Check that the wanted Python has a source here" in out, out[-3000:]
    assert "cloudtpu.pod.python : Create the venv with" in out, out[-3000:]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder of the test's own in /opt, where tpu_python_uv_dir may point."""
    folder = Path(tempfile.mkdtemp(prefix="cloudtpu-uv-test-", dir="/opt"))
    yield folder
    shutil.rmtree(folder)


def _tree(path: Path) -> list[tuple[str, bool, bytes]]:
    return sorted(
        (str(p.relative_to(path)), p.is_symlink(), p.read_bytes() if p.is_file() else b"")
        for p in [path, *path.rglob("*")]
    )


@pytest.mark.parametrize("kind", ["other-files", "link"])
def test_a_folder_that_is_not_the_roles_tool_venv_is_refused_untouched(
    scratch: Path, kind: str
) -> None:
    """tpu_python_uv_dir naming a folder with other things in it, or a symbolic link to one, is
    refused before anything changes (the role would empty its tool venv to rebuild it), with a
    message that names the variable, its value and what is allowed."""
    data = scratch / "data"
    data.mkdir()
    (data / "notes.txt").write_text("mine\n")
    uv_dir = data if kind == "other-files" else scratch / "link"
    if kind == "link":
        uv_dir.symlink_to(data)
    before = _tree(scratch)
    returncode, out = python_role(tpu_python_uv_dir=str(uv_dir))
    assert returncode != 0, out[-3000:]
    reason = (
        "it holds other things than a tool venv made by this role (notes.txt)"
        if kind == "other-files"
        else f"it is a symbolic link to {data}"
    )
    assert (
        f'tpu_python_uv_dir is \\"{uv_dir}\\": {reason}; allowed: a folder that does not' in out
    ), out[-3000:]
    assert "set tpu_python_uv_dir to another path" in out, out[-3000:]
    assert "Create or rebuild the tool venv" not in out, out[-3000:]
    assert _tree(scratch) == before


def test_an_empty_folder_is_where_check_mode_would_create_the_tool_venv(scratch: Path) -> None:
    """An empty folder is fine: check mode says the tool venv would be made there, and makes
    nothing."""
    uv_dir = scratch / "uv"
    uv_dir.mkdir(mode=0o755)
    _, out = python_role(tpu_python_uv_dir=str(uv_dir))
    task = f"TASK [cloudtpu.pod.python : Create or rebuild the tool venv for uv {uv_dir}]"
    # the header, the timing line of profile_tasks, then the result
    assert re.search(re.escape(task) + r" \*+\n(.*\n)?changed: \[localhost\]", out), out[-3000:]
    assert list(uv_dir.iterdir()) == []
