"""No role reads another role's internal names.

A role's internal variables and facts are named tpu_<role>__* (two underscores). Only the files
of roles/<role>/ may use them: what another role or a playbook needs of a role is an entry point
with its own argument spec (the python role's pod_wheels), a public result (the apt role's
tpu_apt_pod_cache_state) or a filter on the role's options (remote_shell_packages).

Scanned: roles/, playbooks/, site.yml and molecule/ (the scenarios use roles as a user does).
tests/ is not: a test may look at a role's internal facts to prove what the role did.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir())
PRIVATE = re.compile(r"\btpu_(" + "|".join(sorted(ROLES, key=len, reverse=True)) + r")__\w*")
SCANNED = ("roles", "playbooks", "molecule", "site.yml")


def _files() -> list[Path]:
    found = []
    for name in SCANNED:
        top = REPO / name
        found.extend([top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()))
    return found


def private_reads(path: Path, text: str) -> list[str]:
    """'file:line: name' for every internal name of a role used outside roles/<role>/."""
    parts = path.relative_to(REPO).parts
    own = parts[1] if parts[0] == "roles" and len(parts) > 1 else None
    return [
        f"{path.relative_to(REPO)}:{number}: {found.group(0)}"
        for number, line in enumerate(text.splitlines(), 1)
        for found in PRIVATE.finditer(line)
        if found.group(1) != own
    ]


def test_no_role_reads_another_roles_internal_names() -> None:
    bad = []
    for path in _files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        bad.extend(private_reads(path, text))
    assert not bad, "internal names used outside their role:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("where", "text", "expected"),
    [
        ("playbooks/bootstrap.yml", "x: '{{ tpu_python__packages_ahead }}'", 1),
        ("roles/base/tasks/converge.yml", "{{ tpu_apt__cache_state['paths'] }}", 1),
        ("roles/apt/tasks/main.yml", "{{ tpu_apt__cache_state['paths'] }}", 0),
        ("roles/remote_shell/vars/main.yml", "{{ tpu_remote_shell__packages }}", 0),
        ("roles/base/tasks/x.yml", "{{ tpu_remote_shell__packages }}", 1),
        ("site.yml", "{{ tpu_apt_pod_cache_state }}", 0),
    ],
)
def test_the_scan_names_file_line_and_variable(where: str, text: str, expected: int) -> None:
    found = private_reads(REPO / where, "---\n" + text)
    assert len(found) == expected, found
    if expected:
        assert found[0].startswith(f"{where}:2: tpu_"), found
