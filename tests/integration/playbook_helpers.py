"""Helpers for tests that run ansible-playbook from the repository and read its output."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests import forked_cli, role_runner

# Modules on localhost run with the control machine's Python (interpreter discovery may find
# a shim of some other Python on a developer's machine).
LOCAL_PYTHON = {"ansible_python_interpreter": "{{ ansible_playbook_python }}"}


def system_python() -> str:
    """major.minor of the control machine's own python3, which its distribution ships."""
    out = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def playbook_env(**extra: str) -> dict[str, str]:
    """The environment of ansible-* commands run from the repository (role_runner's)."""
    return role_runner.ansible_env(**extra)


def error_text(output: str) -> str:
    """The [ERROR] paragraphs of an ansible-playbook run (what the user reads first)."""
    blocks = re.findall(r"^\[ERROR\]: (.*?)(?:\nOrigin:|\n\n|\Z)", output, re.M | re.S)
    return "\n".join(blocks)


def run_playbook(
    playbook: Path | str,
    inventory: Path | str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: int = 300,
) -> subprocess.CompletedProcess[str]:
    """ansible-playbook PLAYBOOK -i INVENTORY ARGS..., from the repository root."""
    cmd = [str(role_runner.BIN / "ansible-playbook"), "-i", str(inventory), str(playbook), *args]
    return forked_cli.run(cmd, cwd=role_runner.REPO, env=env or playbook_env(), timeout=timeout)
