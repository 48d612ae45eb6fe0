"""The bad-input table: many refusals of one role in one ansible-playbook run.

Each case is one inventory host (connection local, on the control machine) carrying the bad
variables as host variables, so one run of a role in check mode answers every case of that
role at once: every host must fail, in the argument spec or the role's preflight.yml, before
any task reported a change, with a message that names the variable, shows the value and says
what is allowed. The results are read from the ansible.posix.json callback, per host.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import forked_cli, role_runner

# Words every refusal uses to say what would be accepted.
# (an argument spec says "unable to convert to int" or "must be one of"; a refusal that
# depends on another variable says what to set instead)
ALLOWED_WORDS = ("allowed", "must", "use true or false", "convert to", "one of", "Set ", " or use ")


@dataclass
class Case:
    """One bad input: its variables, the variable the message names and the value it shows."""

    case_id: str
    variables: dict[str, Any]
    names: str
    shows: str
    # Text the message must not contain (a secret given as the bad value).
    hides: str = ""
    hostvars: dict[str, Any] = field(default_factory=dict)


@dataclass
class Refusal:
    """How one host ended: the task that failed first, its message, what changed before."""

    failed_task: str = ""
    failed_path: str = ""
    message: str = ""
    changed_before: list[str] = field(default_factory=list)


def message_of(result: dict[str, Any]) -> str:
    """The message of a failed task result (and of its loop items that failed, its errors)."""
    text = str(result.get("msg", ""))
    for item in result.get("results", []):  # a loop: the messages of the items that failed
        if isinstance(item, dict) and item.get("failed"):
            text += " " + str(item.get("msg", ""))
    for key in ("argument_errors", "errors"):
        if result.get(key):
            text += " " + json.dumps(result[key])
    return text


def run_cases(
    role: str,
    cases: list[Case],
    *,
    check: bool = True,
    facts: bool = False,
) -> tuple[dict[str, Refusal], str]:
    """Run ``cloudtpu.pod.<role>`` once over one host per case; the refusal of every host.

    ``facts``: gather the minimal facts first (only for roles whose checks read them: fact
    gathering is most of the time of a run).
    """
    play = {
        "name": f"Bad input for {role}",
        "hosts": "all",
        "gather_facts": facts,
        "gather_subset": ["!all"],
        "roles": [{"role": f"cloudtpu.pod.{role}"}],
    }
    return run_hosts([play], cases, check=check)


def run_hosts(
    plays: list[dict[str, Any]], cases: list[Case], *, check: bool, env: dict | None = None
) -> tuple[dict[str, Refusal], str]:
    """Run ``plays`` over one local host per case (its variables as host variables)."""
    hosts = {
        case.case_id: {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            **case.hostvars,
            **case.variables,
        }
        for case in cases
    }
    env = {
        **(env or role_runner.ansible_env()),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json",
        # the case hosts are not real hosts: no facts of theirs go into the shared cache
        "ANSIBLE_CACHE_PLUGIN": "memory",
        "ANSIBLE_GATHERING": "implicit",
    }
    with tempfile.TemporaryDirectory() as tmp:
        inventory = Path(tmp) / "inventory.json"
        inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
        playbook = Path(tmp) / "play.yml"
        playbook.write_text(json.dumps(plays))
        cmd = [str(role_runner.BIN / "ansible-playbook"), "-i", str(inventory), str(playbook)]
        if check:
            cmd.append("--check")
        done = forked_cli.run(cmd, cwd=role_runner.REPO, env=env, timeout=900)
    output = done.stdout + done.stderr
    start = done.stdout.find("{")
    report = json.loads(done.stdout[start:]) if start >= 0 else {"plays": []}
    refusals = {case.case_id: Refusal() for case in cases}
    for play_report in report.get("plays", []):
        for task in play_report.get("tasks", []):
            name = task["task"]["name"]
            path = task["task"].get("path", "")
            for host, result in task.get("hosts", {}).items():
                refusal = refusals.get(host)
                if refusal is None or refusal.failed_task:
                    continue
                if result.get("failed") or result.get("unreachable"):
                    refusal.failed_task, refusal.failed_path = name, path
                    refusal.message = message_of(result)
                elif result.get("changed"):
                    refusal.changed_before.append(name)
    return refusals, output


def problems_of(
    role: str, case: Case, refusal: Refusal, files: tuple[str, ...] = ("preflight.yml",)
) -> list[str]:
    """What is wrong with how ``role`` refused ``case`` (empty: a proper refusal).

    ``files`` are the role's task files that may refuse (they only look, change nothing).
    """
    found = []
    if not refusal.failed_task:
        return [f"{case.case_id}: {role} accepted {case.variables!r}"]
    where = refusal.failed_path
    in_preflight = "Validating arguments against arg spec" in refusal.failed_task or any(
        f"roles/{role}/tasks/{name}:" in where for name in files
    )
    if not in_preflight:
        found.append(f"refused outside the argument spec and {', '.join(files)}: {where}")
    if refusal.changed_before:
        found.append(f"changed something before refusing: {refusal.changed_before}")
    if case.names not in refusal.message:
        found.append(f"the message does not name {case.names}")
    if case.shows and case.shows not in refusal.message:
        found.append(f"the message does not show the value {case.shows!r}")
    if case.hides and case.hides in refusal.message:
        found.append(f"the message shows the secret {case.hides!r}")
    if not any(word in refusal.message for word in ALLOWED_WORDS):
        found.append("the message does not say what is allowed")
    return [f"{case.case_id}: {p}: {refusal.message[:400]}" for p in found]


# Paths no role may take for its own: system folders, and one that climbs into one.
SYSTEM_PATHS = ["/", "/etc", "/usr", "/tmp", "/root", "/home", "/usr/lib/x", "/var/../etc"]


def c(case_id: str, variables: dict, names: str, shows: str, **extra) -> Case:
    """A case of several variables: the message names ``names`` and shows ``shows``."""
    return Case(case_id, variables, names, shows, **extra)


def v(case_id: str, name: str, value: object, shows: str | None = None, **extra) -> Case:
    """A case of one bad variable; the message shows the value as str() gives it by default."""
    return Case(case_id, {name: value}, name, str(value) if shows is None else shows, **extra)


# role: (cases, variables every case starts from, the task files that may refuse)
RoleTable = dict[str, tuple[list[Case], dict[str, Any], tuple[str, ...]]]


def table_cases(table: RoleTable) -> list[tuple[str, Case]]:
    """(role, case) for every case of the table, role by role."""
    return [(role, case) for role, (cases, _, _) in table.items() for case in cases]


def case_ids(cases: list[tuple[str, Case]]) -> list[str]:
    """The test id of each (role, case): ``role/case id``."""
    return [f"{role}/{case.case_id}" for role, case in cases]


def assert_big_enough(cases: list[tuple[str, Case]], minimum: int) -> None:
    """A table keeps at least ``minimum`` cases, none of them twice."""
    ids = case_ids(cases)
    assert len(ids) >= minimum, len(ids)
    assert len(ids) == len(set(ids)), "case ids repeat"


class RoleRuns(dict):
    """The refusals per role of ``table``; a role runs once, over all its cases, when first
    asked for (gathering facts first for the roles in ``facts``, whose checks read them)."""

    def __init__(self, table: RoleTable, facts: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.table = table
        self.facts = facts

    def __missing__(self, role: str) -> dict[str, Refusal]:
        cases, common, _ = self.table[role]
        for case in cases:
            # each case its own one-worker node, so no two cases form a pod
            case.hostvars = {**common, "tpu_node": case.case_id}
        self[role], _ = run_cases(role, cases, facts=role in self.facts)
        return self[role]

    def assert_refused(self, role: str, case: Case) -> None:
        """``role`` refused ``case`` properly in its run (see :func:`problems_of`)."""
        problems = problems_of(role, case, self[role][case.case_id], files=self.table[role][2])
        assert not problems, "\n".join(problems)
