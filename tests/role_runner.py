"""Run one role of the collection against the control machine, for preflight tests.

The role runs in check mode on localhost (connection local), so a role whose preflight
lets a bad value through still changes nothing here; the tests then see a non-zero exit
code missing or a message that does not name the variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests import forked_cli

REPO = Path(__file__).resolve().parents[1]
# The toolchain that runs the tests: .venv, or .venv-next under `make test-next`.
BIN = Path(sys.executable).parent


def ansible_env(**extra: str) -> dict[str, str]:
    """Environment for ansible-* commands run from the repository."""
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    env.update(extra)
    return env


def isolated_installer_env(**extra: str) -> dict[str, str]:
    """ansible_env() without the control machine's own pip and uv settings (a configuration
    file, extra indexes, find-links): an installer then sees only the index a test gives it."""
    env = {
        key: value
        for key, value in ansible_env(**extra).items()
        if not key.startswith(("PIP_", "UV_")) or key in ("PIP_CERT",)
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env["UV_NO_CONFIG"] = "1"
    return env


def run_role(
    role: str,
    extra_vars: dict,
    *,
    check: bool = True,
    hostvars: dict | None = None,
    timeout: int = 300,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `cloudtpu.pod.<role>` on localhost with the given variables.

    `env` replaces the environment of ansible-playbook (default: ansible_env()).

    `hostvars` are set as play vars (lower precedence than extra vars), which is how a
    static inventory would set the shared tpu_* host variables.
    """
    play = [
        {
            "name": f"Run {role}",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": True,
            "vars": {
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                **(hostvars or {}),
            },
            "roles": [{"role": f"cloudtpu.pod.{role}"}],
        }
    ]
    with tempfile.TemporaryDirectory() as tmp:
        playbook = Path(tmp) / "play.yml"
        playbook.write_text(json.dumps(play))
        varsfile = Path(tmp) / "vars.json"
        varsfile.write_text(json.dumps(extra_vars))
        cmd = [
            str(BIN / "ansible-playbook"),
            "-i",
            "localhost,",
            str(playbook),
            "-e",
            f"@{varsfile}",
        ]
        if check:
            cmd.append("--check")
        return forked_cli.run(
            cmd, cwd=REPO, env=env if env is not None else ansible_env(), timeout=timeout
        )
