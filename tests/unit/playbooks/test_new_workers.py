# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""provision.yml and recover.yml bring their new workers in through one shared playbook
(playbooks/shared/new_workers.yml): forget the old host keys, read the inventory again, check the
groups, wait for SSH. Neither keeps a copy of those steps, and each passes every variable the
shared file's header names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"
SHARED = PLAYBOOKS / "shared" / "new_workers.yml"
USERS = ("provision.yml", "recover.yml")
# What the shared file does, by module: a playbook that does it too keeps a copy.
STEPS = (
    "ansible.builtin.known_hosts",
    "cloudtpu.pod.ssh_wait",
)
META = ("refresh_inventory", "reset_connection", "clear_facts")


def _load(path: Path) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text()) or []


def _imports(path: Path) -> list[dict[str, Any]]:
    return [
        play
        for play in _load(path)
        if play.get("ansible.builtin.import_playbook") == "shared/new_workers.yml"
    ]


def _tasks(plays: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [task for play in plays for key in ("pre_tasks", "tasks") for task in play.get(key, [])]


def _variables() -> set[str]:
    """The variables the shared file's header names."""
    header = [line for line in SHARED.read_text().splitlines() if line.startswith("#")]
    return set(re.findall(r"\b_tpu_new_workers_[a-z_]+", "\n".join(header)))


@pytest.mark.parametrize("name", USERS)
def test_the_playbook_imports_the_shared_steps(name: str) -> None:
    imports = _imports(PLAYBOOKS / name)
    assert len(imports) == 1, f"{name} does not import shared/new_workers.yml once"
    given = set(imports[0].get("vars", {}))
    # _tpu_new_workers_user is optional (else the user Ansible connects as)
    missing = _variables() - given - {"_tpu_new_workers_user"}
    assert not missing, f"{name} does not pass {sorted(missing)}"


@pytest.mark.parametrize("name", USERS)
def test_the_playbook_keeps_no_copy_of_the_steps(name: str) -> None:
    for task in _tasks(_load(PLAYBOOKS / name)):
        assert not set(STEPS) & set(task), f"{name}: {task.get('name')}"
        assert task.get("ansible.builtin.meta") not in META, f"{name}: {task.get('name')}"


def test_the_shared_file_does_every_step_and_names_its_variables() -> None:
    plays = _load(SHARED)
    tasks = _tasks(plays)
    for step in STEPS:
        assert any(step in task for task in tasks), step
    metas = [task.get("ansible.builtin.meta") for task in tasks]
    assert [meta for meta in metas if meta] == list(META), metas
    used = set(re.findall(r"\b_tpu_new_workers_[a-z_]+", yaml.safe_dump(plays)))
    assert used == _variables(), (sorted(used), sorted(_variables()))
    # the play names are the importing playbook's (provision.yml's and recover.yml's own)
    assert [play["name"] for play in plays] == [
        "{{ _tpu_new_workers_plays[0] | default('Read the new workers into the inventory') }}",
        "{{ _tpu_new_workers_plays[1] | default('Wait for SSH on the new workers') }}",
    ]


@pytest.mark.parametrize(
    ("name", "plays"),
    [
        (
            "provision.yml",
            [
                "Provision | read the new workers into the inventory",
                "Provision | wait for SSH on every new worker",
            ],
        ),
        (
            "recover.yml",
            [
                "Recover | read the recovered workers into the inventory",
                "Recover | wait for SSH on the recovered workers",
            ],
        ),
    ],
)
def test_the_plays_keep_their_names(name: str, plays: list[str]) -> None:
    assert _imports(PLAYBOOKS / name)[0]["vars"]["_tpu_new_workers_plays"] == plays
