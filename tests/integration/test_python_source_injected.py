"""The python role's preflight decides the interpreter's source from the host's facts.

Exercised: the role's own checks (tasks_from preflight.yml, then host.yml, which decides the
source; check mode, on the control machine) with Ubuntu 20.04/22.04/24.04 and Debian 12 facts
injected in place of the gathered ones, so the filter is wired to the real fact names and its
message reaches the user.
Not exercised: adding the deadsnakes PPA and installing from the Ubuntu archive or the PPA; no
Ubuntu mirror is reachable from the test machines (the Debian path runs for real in
molecule/framework).
"""

from __future__ import annotations

import json

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON, error_text, run_playbook

FACTS = {
    "focal": {"distribution": "Ubuntu", "distribution_version": "20.04"},
    "jammy": {"distribution": "Ubuntu", "distribution_version": "22.04"},
    "noble": {"distribution": "Ubuntu", "distribution_version": "24.04"},
    "bookworm": {"distribution": "Debian", "distribution_version": "12.7"},
}


def run_preflight(tmp_path, facts: dict, **variables):
    play = [
        {
            "name": "Preflight of cloudtpu.pod.python with injected facts",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            # A play variable named ansible_facts stands in for the gathered facts.
            "vars": {**LOCAL_PYTHON, "ansible_facts": facts},
            # The checks of the variables, then the host's part: where Python comes from.
            "tasks": [
                {
                    "name": f"Run {name}",
                    "ansible.builtin.include_role": {
                        "name": "cloudtpu.pod.python",
                        "tasks_from": name,
                    },
                    "vars": {
                        "tpu_login_user": "root",
                        "tpu_venv_path": "/opt/cloudtpu-check-nonexistent/venv",
                        **variables,
                    },
                }
                for name in ("preflight.yml", "host.yml")
            ],
        }
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps(play))
    return run_playbook(playbook, "localhost,", "--check")


@pytest.mark.parametrize(
    ("release", "version", "message"),
    [
        ("jammy", "3.10", "python3.10 from the Ubuntu 22.04 archive"),
        ("jammy", "3.12", "python3.12 from the deadsnakes PPA (Ubuntu 22.04 ships"),
        ("focal", "3.10", "python3.10 from the deadsnakes PPA (Ubuntu 20.04 ships"),
        ("focal", "3.8", "python3.8 from the Ubuntu 20.04 archive"),
        ("noble", "3.10", "python3.10 from the deadsnakes PPA (Ubuntu 24.04 ships"),
        ("noble", "3.12", "python3.12 from the Ubuntu 24.04 archive"),
        ("bookworm", "3.11", "python3.11 from the Debian 12 archive"),
    ],
)
def test_source_is_decided(tmp_path, release, version, message):
    result = run_preflight(tmp_path, FACTS[release], tpu_python_version=version)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert message in out, out[-3000:]


@pytest.mark.parametrize(
    ("release", "variables", "words"),
    [
        ("bookworm", {}, ["'3.10'", "Debian 12 ships python3.11", "tpu_python_version: '3.11'"]),
        ("bookworm", {"tpu_python_source": "deadsnakes"}, ["not Ubuntu"]),
        ("noble", {"tpu_python_version": "3.15"}, ["'3.15'", "Ubuntu 24.04 ships python3.12"]),
        ("jammy", {"tpu_python_version": "3.12", "tpu_python_source": "system"}, ["'system'"]),
    ],
)
def test_no_source_is_refused_in_preflight(tmp_path, release, variables, words):
    result = run_preflight(tmp_path, FACTS[release], **variables)
    out = result.stdout + result.stderr
    error = error_text(out) or out
    assert result.returncode != 0, out[-3000:]
    for word in words:
        assert word in error, f"{word!r} not in:\n{error[-3000:]}"
