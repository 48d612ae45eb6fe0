"""The bad-input table of the day-two playbooks: refused before any worker is reached.

run.yml, sync.yml, logs.yml, status.yml and babysit.yml act on the pod's workers, and check
every variable on this machine first. The table runs each whole playbook, once per case and once
more with --check, against an inventory of two workers that cannot be reached: their address is a
local port that a socket of this module holds without listening, so any task that connects fails
at once as unreachable. The case's variables come with -e @file, strings as -e key=value gives
them (a list or a mapping where the case is about the type). Every case must fail in a task that
checks (its name starts with Check or Refuse), before any task changed and with no worker
reached, with a message that names the variable, shows the value and says what is allowed; and
nothing may appear in the folder the playbooks run in (logs.yml and babysit.yml write there).

Each playbook's base values, without a bad one, get through every check to the first task that
reaches a worker (test_the_good_values_get_through_the_checks): so each case is refused for its
own value.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import bad_input, forked_cli
from tests.role_runner import BIN, REPO, ansible_env

GOOD: dict[str, dict[str, Any]] = {
    "run.yml": {"cmd": "hostname"},
    "sync.yml": {"tpu_sync_src": "proj"},
    "logs.yml": {},
    "status.yml": {},
    "babysit.yml": {},
}
# Words a refusal uses to say what would be accepted.
ALLOWED_WORDS = ("allowed", "must", "give ")


@dataclass
class Case:
    playbook: str
    variable: str
    value: Any
    shows: str
    # more variables the case needs (another source, a switch that makes the value count)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def case_id(self) -> str:
        more = "".join(f",{k}={json.dumps(v)}" for k, v in self.extra.items())
        name = self.playbook.removesuffix(".yml")
        return f"{name}/{self.variable}={json.dumps(self.value)}{more}"

    @property
    def variables(self) -> dict[str, Any]:
        return {**GOOD[self.playbook], **self.extra, self.variable: self.value}


def typed(playbook: str, variable: str, values: list[str], **extra: Any) -> list[Case]:
    """Cases of values typed as -e variable=value (strings), each shown as typed."""
    return [Case(playbook, variable, value, value, dict(extra)) for value in values]


# Local paths (the current folder holds proj/train.sh, notes.txt, .ssh/, linked -> proj and
# etc -> /etc).
SCRIPT = {"cmd": ""}
CASES = [
    Case("run.yml", "cmd", "", "empty"),
    Case("run.yml", "cmd", ["hostname"], "['hostname']"),
    *typed("run.yml", "tpu_run_timeout", ["0", "abc", "2592001"]),
    Case("run.yml", "tpu_run_timeout", True, "true"),
    *typed("run.yml", "tpu_run_tail", ["-1"]),
    *typed("run.yml", "tpu_run_start_delay", ["1.5"]),
    *typed("run.yml", "tpu_run_detach", ["maybe"]),
    *typed("run.yml", "tpu_run_unlock", ["maybe"]),
    *typed("run.yml", "tpu_run_sync", ["maybe"]),
    *typed("run.yml", "tpu_run_workdir", ["../x", "/etc", "/home/other/x"]),
    *typed("run.yml", "tpu_run_log_copy", ["/etc/runs", "runs", "/mnt/../etc"]),
    *typed("run.yml", "tpu_run_log_copy_every", ["0", "soon"]),
    # the values of tpu_run_env are secret: a refusal says what was given, never the value
    Case("run.yml", "tpu_run_env", "FOO=1", "got a string (not shown"),
    Case("run.yml", "tpu_run_env", {"1BAD": "x"}, "1BAD"),
    *typed("run.yml", "tpu_run_megascale_port", ["70000", "8476"]),
    *typed("run.yml", "tpu_run_script", ["../train.sh", "/etc/passwd", "missing.sh"], **SCRIPT),
    *typed("run.yml", "tpu_run_script", ["linked/train.sh"], **SCRIPT),
    Case("run.yml", "tpu_run_script", ["train.sh"], '["train.sh"]', SCRIPT),
    Case("run.yml", "tpu_sync_src", "", "empty", {"tpu_run_sync": "true"}),
    *typed("run.yml", "tpu_sync_src", ["/etc", "linked"], tpu_run_sync="true"),
    *typed("run.yml", "tpu_sync_dest", ["/etc/x"], tpu_sync_src="proj", tpu_run_sync="true"),
    Case("sync.yml", "tpu_sync_src", "", "empty"),
    *typed("sync.yml", "tpu_sync_src", ["../proj", "/etc", "/", "linked", "missing", "notes.txt"]),
    Case("sync.yml", "tpu_sync_src", ["proj"], '["proj"]'),
    *typed("sync.yml", "tpu_sync_dest", ["../x", "/etc/x", "/home/other/x", "/home/tpu/.ssh"]),
    *typed("sync.yml", "tpu_sync_src", [".ssh"], tpu_sync_delete="true"),
    *typed("sync.yml", "tpu_sync_delete", ["maybe"]),
    *typed("sync.yml", "tpu_sync_repo", ["--upload-pack=x"], tpu_sync_src=""),
    Case("sync.yml", "tpu_sync_repo", ["x"], '["x"]', {"tpu_sync_src": ""}),
    *typed("sync.yml", "tpu_sync_version", ["--x"], tpu_sync_src="", tpu_sync_repo="r.git"),
    *typed("logs.yml", "tpu_logs_tail", ["-1", "abc"]),
    *typed("logs.yml", "tpu_logs_fetch", ["maybe"]),
    *typed("logs.yml", "tpu_logs_run", ["../../etc", "latest"]),
    *typed("logs.yml", "tpu_logs_dest", ["/etc", "../x", "etc/x", "notes.txt"]),
    *typed("logs.yml", "tpu_logs_copy", ["/home/tpu/runs", "runs"]),
    Case("logs.yml", "tpu_logs_dest", ["x"], '["x"]'),
    *typed("status.yml", "tpu_status_runs", ["-1", "abc"]),
    *typed("status.yml", "tpu_status_projects", ["../x", "Bad Project"]),
    Case("status.yml", "tpu_status_projects", {"a": 1}, '{"a": 1}'),
    Case("status.yml", "tpu_status_projects", ["demo-project", 5], "5"),
    *typed("status.yml", "tpu_status_zones", ["nowhere", "us-central2-b,../x"]),
    *typed("babysit.yml", "tpu_babysit_max_recoveries", ["1001", "many"]),
    *typed("babysit.yml", "tpu_babysit_interval", ["0"]),
    *typed("babysit.yml", "tpu_babysit_backoff_max", ["86401"]),
    *typed("babysit.yml", "tpu_babysit_timeout", ["10"]),
    Case("babysit.yml", "tpu_babysit_timeout", True, "true"),
    *typed("babysit.yml", "tpu_babysit_run", ["../x"]),
    *typed("babysit.yml", "tpu_babysit_log_dir", ["/etc", "../x", "etc/babysit", "notes.txt"]),
    *typed("babysit.yml", "tpu_babysit_teardown", ["sometimes", "On_Success"]),
    *typed("babysit.yml", "cmd", ["hostname"]),
    *typed("babysit.yml", "tpu_run_detach", ["false"]),
    # run.yml's and sync.yml's variables, which every restart uses, are checked at the start
    *typed("babysit.yml", "tpu_run_timeout", ["abc"]),
    Case("babysit.yml", "tpu_run_env", "FOO=1", "got a string (not shown"),
    *typed("babysit.yml", "tpu_run_script", ["linked/train.sh"]),
    *typed("babysit.yml", "tpu_sync_src", ["/etc"], tpu_run_sync="true"),
    Case("babysit.yml", "tpu_sync_src", "", "empty", {"tpu_run_sync": "true"}),
]


@dataclass
class Outcome:
    """One ansible-playbook run: its exit code, its first failure, and the workers it reached."""

    returncode: int
    refusal: bad_input.Refusal
    reached: list[str]
    output: str


def read_report(stdout: str) -> tuple[bad_input.Refusal, list[str]]:
    """The first failed task of the run (any host), what changed before, the hosts reached."""
    start = stdout.find("{")
    report = json.loads(stdout[start:]) if start >= 0 else {"plays": []}
    refusal, reached = bad_input.Refusal(), []
    for play in report.get("plays", []):
        for task in play.get("tasks", []):
            for host, result in task.get("hosts", {}).items():
                if result.get("unreachable"):
                    reached.append(host)
                if refusal.failed_task:
                    continue
                if result.get("failed") or result.get("unreachable"):
                    refusal.failed_task = task["task"]["name"]
                    refusal.message = bad_input.message_of(result)
                elif result.get("changed"):
                    refusal.changed_before.append(task["task"]["name"])
    return refusal, reached


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The unreachable workers' inventory, the folder the playbooks run in, the environment."""
    root = tmp_path_factory.mktemp("day2-bad")
    here = root / "here"
    (here / "proj").mkdir(parents=True)
    (here / "proj" / "train.sh").write_text("echo hi\n")
    (here / "notes.txt").write_text("notes\n")
    (here / ".ssh").mkdir()  # a folder named as the login home's keys
    (here / "linked").symlink_to(here / "proj")
    (here / "etc").symlink_to("/etc")
    (root / "tmp").mkdir()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # held, never listening: a connection is refused
        port = closed.getsockname()[1]
        worker = {"ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": "tpu"}
        worker.update(tpu_node="pod-bad", tpu_project="demo-project", tpu_zone="us-central2-b")
        hosts = {f"pod-bad-w{i}": {**worker, "tpu_worker_id": i} for i in range(2)}
        inventory = root / "hosts.json"
        inventory.write_text(json.dumps({"all": {"children": {"tpu": {"hosts": hosts}}}}))
        env = ansible_env(
            ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
            ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json",
            ANSIBLE_CACHE_PLUGIN="memory",
            ANSIBLE_SSH_RETRIES="0",
            ANSIBLE_LOCAL_TEMP=str(root / "tmp"),
            CLOUDTPU_API_ENDPOINT=f"http://127.0.0.1:{port}/v2",
            TMPDIR=str(root / "tmp"),
        )
        yield {"root": root, "here": here, "inventory": inventory, "env": env}


def play(pod: dict[str, Any], playbook: str, variables: dict, check: bool, name: str) -> Outcome:
    vars_file = pod["root"] / f"{name}.json"
    vars_file.write_text(json.dumps(variables))
    cmd = [str(BIN / "ansible-playbook"), "-i", str(pod["inventory"])]
    cmd += [str(REPO / "playbooks" / playbook), "-e", f"@{vars_file}"]
    done = forked_cli.run(
        [*cmd, *(["--check"] if check else [])], cwd=pod["here"], env=pod["env"], timeout=300
    )
    refusal, reached = read_report(done.stdout)
    return Outcome(done.returncode, refusal, reached, done.stdout[-3000:] + done.stderr[-2000:])


def tree(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture(scope="module")
def outcomes(pod: dict[str, Any]) -> dict[tuple[str, bool], Outcome]:
    """Every case, once as a run and once with --check."""
    before = tree(pod["here"])
    jobs = [(case, check) for case in CASES for check in (False, True)]

    def one(number: int) -> Outcome:
        case, check = jobs[number]
        return play(pod, case.playbook, case.variables, check, f"case{number:03d}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(one, range(len(jobs))))
    pod["tree_after"] = tree(pod["here"])
    pod["tree_before"] = before
    pairs = zip(jobs, found, strict=True)
    return {(case.case_id, check): outcome for (case, check), outcome in pairs}


def test_the_table_covers_every_playbook() -> None:
    assert len({case.case_id for case in CASES}) == len(CASES), "case ids repeat"
    per_playbook = {name: sum(c.playbook == name for c in CASES) for name in GOOD}
    assert all(count >= 7 for count in per_playbook.values()), per_playbook


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
@pytest.mark.parametrize("case", CASES, ids=[c.case_id for c in CASES])
def test_bad_input_is_refused_before_any_worker_is_reached(
    outcomes: dict[tuple[str, bool], Outcome], case: Case, check: bool
) -> None:
    outcome = outcomes[(case.case_id, check)]
    refusal = outcome.refusal
    where = f"{case.case_id}{' --check' if check else ''}: {refusal.message[:600]}"
    assert outcome.returncode != 0, f"accepted: {where}\n{outcome.output}"
    assert refusal.failed_task.startswith(("Check", "Refuse")), (refusal.failed_task, where)
    assert not outcome.reached, (f"workers reached: {outcome.reached}", where)
    assert not refusal.changed_before, (refusal.changed_before, where)
    assert case.variable in refusal.message, where
    assert case.shows in refusal.message, where
    assert any(word in refusal.message for word in ALLOWED_WORDS), where


def test_nothing_was_written_where_the_playbooks_ran(
    outcomes: dict[tuple[str, bool], Outcome], pod: dict[str, Any]
) -> None:
    assert pod["tree_after"] == pod["tree_before"]


@pytest.mark.parametrize("playbook", list(GOOD))
def test_the_good_values_get_through_the_checks(pod: dict[str, Any], playbook: str) -> None:
    """Without a bad value, each playbook passes its checks and stops at the first task that
    reaches a worker (status.yml: it asks every worker, ignoring the unreachable ones)."""
    outcome = play(pod, playbook, GOOD[playbook], False, f"good-{playbook}")
    refusal = outcome.refusal
    assert outcome.reached, f"{playbook}: no worker reached\n{outcome.output}"
    assert not refusal.failed_task.startswith(("Check", "Refuse")), (refusal, outcome.output)
    assert "Failed to connect to the host" in refusal.message, refusal
