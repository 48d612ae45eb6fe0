"""Preflight checks of roles: run a role with a bad value and expect a refusal that names it.

Wraps tests.role_runner.run_role with the Python running the tests as the module interpreter,
so discovery does not pick an interpreter that merely appears on PATH.
"""

from __future__ import annotations

import subprocess
import sys

from tests import role_runner


def run_role(
    role: str, extra_vars: dict, *, check: bool = True, hostvars: dict | None = None
) -> subprocess.CompletedProcess[str]:
    """role_runner.run_role on localhost, with the settings above."""
    extra = {"ansible_python_interpreter": sys.executable, **extra_vars}
    return role_runner.run_role(role, extra, check=check, hostvars=hostvars)


def assert_refused(role: str, variable: str, value: object, shown: str) -> str:
    """Run `role` with `variable: value`; it must fail before changing anything.

    The output must name the variable and show the bad value (`shown`, as printed).
    Returns the output for further checks.
    """
    result = run_role(role, {variable: value})
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"{role} accepted {variable}={value!r}:\n{output[-3000:]}"
    assert variable in output, f"the refusal does not name {variable}:\n{output[-3000:]}"
    assert shown in output, f"the refusal does not show the value {shown!r}:\n{output[-3000:]}"
    changed = [line for line in output.splitlines() if line.startswith("changed:")]
    assert not changed, f"{role} changed something before refusing: {changed}"
    failed_task = _failed_task(output)
    assert "Validating arguments against arg spec" in failed_task or (
        f"roles/{role}/tasks/preflight.yml" in output
    ), f"refused outside the argument spec and preflight.yml: {failed_task}\n{output[-3000:]}"
    return output


def _failed_task(output: str) -> str:
    """The header of the task that failed first."""
    task = ""
    for line in output.splitlines():
        if line.startswith("TASK ["):
            task = line
        elif line.startswith(("fatal:", "failed:")):
            return task
    return task
