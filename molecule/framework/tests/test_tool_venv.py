"""cloudtpu.pod.python's tool venv of uv (tpu_python_uv_dir, /opt/cloudtpu/uv) on the worker that
converge, idempotence and the earlier tests left converged.

Runs after test_framework.py (file order) and leaves the worker converged again:
1. a converged worker costs the python role 3 tasks (its argument spec, its state check, the
   skipped include of its tasks), and nothing changes;
2. the tool venv broken behind the record's back (bin/python a dangling link, as when the
   system Python it was made with is removed; the uv package removed from site-packages): the
   state check sees it, `--check --diff` says a real run rebuilds it and changes nothing, the
   next run rebuilds it (uv works again through /usr/local/bin/uv), and the run after it takes
   the fast path again;
3. a tool venv the role made before it kept a marker in it is taken over, not rebuilt;
4. tpu_python_uv_dir naming a folder with other things in it, or a symbolic link to the tool
   venv, is refused before anything changes, and the folder is left as it was.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import changed, tasks

UV_DIR = "/opt/cloudtpu/uv"
MARKER = f"{UV_DIR}/.cloudtpu-tool-venv"
UV_VERSION = "0.13.8"
INCLUDE = "Bring the worker to the role's state where it differs from the record"
BREAKAGES = {
    "python-dangling": f"ln -sfn /usr/bin/python3.0-removed {UV_DIR}/bin/python",
    "uv-package-removed": f"rm -rf {UV_DIR}/lib/python3*/site-packages/uv",
}
PLAY = """---
- name: Python
  hosts: all
  become: true
  gather_facts: true
  roles:
    - role: cloudtpu.pod.python
"""


def python_role(*options: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """The python role alone, as converge.yml runs it."""
    playbook = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "python_only.yml"
    playbook.write_text(PLAY)
    cmd = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], *options, str(playbook)]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert (result.returncode == 0) == ok, result.stdout[-5000:] + result.stderr[-2000:]
    return result


def assert_fast(result: subprocess.CompletedProcess[str]) -> None:
    seen = tasks(result, "python")
    assert changed(result) == 0, result.stdout[-4000:]
    assert len(seen) == 3 and (INCLUDE, "skipping") in seen, seen


def tool_works(host) -> bool:
    return host.run(f"{UV_DIR}/bin/python -I -c 'import sys, pip, uv'").rc == 0


def test_a_converged_worker_costs_the_python_role_three_tasks() -> None:
    assert_fast(python_role())


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_broken_tool_venv_is_seen_then_rebuilt(host, breakage: str) -> None:
    assert tool_works(host), "the tool venv should work before it is broken"
    marker = host.file(MARKER).content_string
    host.run_test(BREAKAGES[breakage])
    assert not tool_works(host), f"{breakage} did not break the tool venv"

    dry = python_role("--check", "--diff")
    out = dry.stdout
    assert (INCLUDE, "skipping") not in tasks(dry, "python"), out[-4000:]
    assert f"WARNING: the tool venv {UV_DIR} is broken" in out, out[-4000:]
    assert "a real run rebuilds it" in out, out[-4000:]
    assert not tool_works(host), "check mode must not rebuild the tool venv"

    real = python_role()
    out = real.stdout
    assert f"WARNING: the tool venv {UV_DIR} is broken" in out and "it is rebuilt" in out, out[
        -4000:
    ]
    assert changed(real) >= 2, out[-4000:]
    assert tool_works(host), out[-4000:]
    assert host.file(MARKER).content_string == marker
    for uv in (f"{UV_DIR}/bin/uv", "/usr/local/bin/uv"):
        assert host.check_output(f"{uv} --version").split()[1] == UV_VERSION
    assert host.file(UV_DIR).user == "root"
    assert_fast(python_role())


def test_a_tool_venv_made_before_the_marker_is_taken_over(host) -> None:
    uv_before = host.file(f"{UV_DIR}/bin/uv").sha256sum
    python_before = host.file(f"{UV_DIR}/bin/python").linked_to
    host.run_test(f"rm {MARKER}")
    result = python_role()
    assert "is broken" not in result.stdout, result.stdout[-4000:]
    made = ("Create or rebuild the tool venv for uv " + UV_DIR, "changed")
    assert made in tasks(result, "python")
    assert host.file(MARKER).exists
    assert host.file(f"{UV_DIR}/bin/uv").sha256sum == uv_before
    assert host.file(f"{UV_DIR}/bin/python").linked_to == python_before
    assert_fast(python_role())


@pytest.mark.parametrize("kind", ["other-files", "link-to-the-tool-venv"])
def test_a_folder_that_is_not_the_roles_tool_venv_is_refused_untouched(host, kind: str) -> None:
    other = "/opt/cloudtpu-other" if kind == "other-files" else "/opt/cloudtpu-uv-link"
    if kind == "other-files":
        host.run_test(f"mkdir -p {other}/models && echo mine > {other}/notes.txt")
        reason = "it holds other things than a tool venv made by this role (models, notes.txt)"
    else:
        host.run_test(f"ln -sfn {UV_DIR} {other}")
        reason = f"it is a symbolic link to {UV_DIR}"
    listing = f"ls -laR --time-style=full-iso {other}/ {UV_DIR}/ /usr/local/bin/uv"
    before = host.check_output(listing)
    try:
        result = python_role("-e", f"tpu_python_uv_dir={other}", ok=False)
        # the failed task's message is on standard error
        out = result.stdout + result.stderr
        message = f'tpu_python_uv_dir is "{other}": {reason}; allowed: a folder that does not'
        assert message in out, out[-4000:]
        assert "set tpu_python_uv_dir to another path" in out, out[-4000:]
        assert not any(name.startswith("Create or rebuild") for name, _ in tasks(result, "python"))
        assert host.check_output(listing) == before
    finally:
        host.run_test(f"rm -rf {other}")
    assert_fast(python_role())
