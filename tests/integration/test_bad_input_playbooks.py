"""The bad-input table of the lifecycle playbooks: refused before any node changes.

provision.yml, teardown.yml, recover.yml and firewall.yml check every variable in their first
play, on localhost, before anything is created or deleted. The table runs that first play as the
playbook file has it (only its hosts changed to one local host per case, the case's variables as
host variables, strings as -e key=value gives them): one run per playbook for all its cases,
and one more with --check. Every case must fail in a task that checks (its name starts with
Check or Refuse), before any task changed, with a message that names the variable, shows the
value and says what is allowed.

That the first play's refusal stops the whole playbook before any API call that changes a
node is shown by running whole playbooks with one bad value each (and with --check) against
the emulator's in-memory backend, which must see no POST, PATCH or DELETE.

The day-two playbooks (run, sync, logs, status, babysit) have their table in
test_bad_input_day_two.py. bootstrap.yml's one variable, tpu_bootstrap_hosts, is checked by a
play of its own on all:localhost (run_once, so not a play for this table): its cases run the
whole playbook at the end.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests import bad_input
from tests.integration.lifecycle_support import (
    PROJECT,
    ZONE,
    EmulatorCli,
    ansible_env,
    run,
)
from tests.role_runner import BIN, REPO

EMULATOR_DELAY = 0.05  # seconds each operation of the emulator takes (conftest.py)
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleQ bad-input"
GOOD = {
    "provision.yml": {
        "tpu_provision_project": PROJECT,
        "tpu_provision_zone": ZONE,
        "tpu_provision_name": "pod-bad",
        "tpu_provision_ssh_user": "tpu",
        "tpu_provision_ssh_public_key": KEY,
        "tpu_provision_known_hosts": "/dev/null",
        "tpu_provision_wait_for_ssh": "false",
        "tpu_provision_poll_interval": "0.1",
    },
    "teardown.yml": {
        "tpu_teardown_project": PROJECT,
        "tpu_teardown_zone": ZONE,
        "tpu_teardown_nodes": "pod-a",
        "tpu_teardown_confirm": "true",
        "tpu_teardown_poll_interval": "0.1",
    },
    "recover.yml": {
        "tpu_recover_project": PROJECT,
        "tpu_recover_zone": ZONE,
        "tpu_recover_nodes": "pod-a",
        "tpu_recover_force": "true",
        "tpu_recover_bootstrap": "false",
        "tpu_recover_ssh_config": "false",
        "tpu_recover_wait_for_ssh": "false",
        "tpu_recover_poll_interval": "0.1",
    },
    "firewall.yml": {
        "tpu_firewall_source_ranges": ["203.0.113.7/32"],
        "tpu_firewall_target_tags": ["tpu"],
        "tpu_firewall_project": PROJECT,
    },
}
# Words a refusal uses to say what would be accepted.
ALLOWED_WORDS = ("allowed", "must", "to allow it", "convert to", "valid boolean")


@dataclass
class Case:
    playbook: str
    variable: str
    value: object
    shows: str
    # more good values the case needs (pull mode's), under the bad one
    base: dict | None = None

    @property
    def case_id(self) -> str:
        return f"{self.playbook.removesuffix('.yml')}/{self.variable}={json.dumps(self.value)}"


def typed(playbook: str, variable: str, values: list[str]) -> list[Case]:
    """Cases of values typed as -e variable=value (strings), each shown as typed."""
    return [Case(playbook, variable, value, value) for value in values]


# Pull mode (tpu_provision_bootstrap=pull) with good values, for its cases.
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PULL = {
    "tpu_provision_bootstrap": "pull",
    "tpu_provision_pull_repo": "https://git.example.test/cloudtpu-pod.git",
    "tpu_provision_pull_version": COMMIT,
}


PULL_REST = {k: v for k, v in PULL.items() if k != "tpu_provision_pull_repo"}


def pull(variable: str, value: object, shows: str) -> Case:
    """A pull-mode case of provision.yml."""
    return Case("provision.yml", variable, value, shows, base=PULL)


BAD_NUMBERS = ["0", "-5", "abc"]
BAD_INTERVALS = ["0", "-1", "abc", "0.01"]
CASES = [
    *typed("provision.yml", "tpu_provision_timeout", [*BAD_NUMBERS, "700000"]),
    *typed("provision.yml", "tpu_provision_poll_interval", BAD_INTERVALS),
    *typed("provision.yml", "tpu_provision_ssh_timeout", BAD_NUMBERS),
    *typed("provision.yml", "tpu_provision_count", ["0", "65", "two"]),
    *typed("provision.yml", "tpu_provision_spot", ["maybe"]),
    *typed("provision.yml", "tpu_provision_enable_external_ips", ["maybe"]),
    *typed("provision.yml", "tpu_provision_wait_for_ssh", ["maybe"]),
    Case("provision.yml", "tpu_provision_ssh_user", "Bad User", "Bad User"),
    Case("provision.yml", "tpu_provision_project", "Bad Project", "Bad Project"),
    Case("provision.yml", "tpu_provision_zone", "../x", "../x"),
    *typed("teardown.yml", "tpu_teardown_timeout", BAD_NUMBERS),
    *typed("teardown.yml", "tpu_teardown_poll_interval", BAD_INTERVALS),
    *typed("teardown.yml", "tpu_teardown_confirm", ["maybe"]),
    Case("teardown.yml", "tpu_teardown_project", "../x", "../x"),
    *typed("recover.yml", "tpu_recover_timeout", BAD_NUMBERS),
    *typed("recover.yml", "tpu_recover_poll_interval", BAD_INTERVALS),
    *typed("recover.yml", "tpu_recover_ssh_timeout", BAD_NUMBERS),
    *typed("recover.yml", "tpu_recover_pull_timeout", BAD_NUMBERS),
    *typed("recover.yml", "tpu_recover_force", ["maybe"]),
    Case("recover.yml", "tpu_recover_nodes", "Pod A", "Pod A"),
    Case("recover.yml", "tpu_recover_zone", "nowhere", "nowhere"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["0.0.0.0/0"], "0.0.0.0/0"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["0.0.0.0/1", "128.0.0.0/1"], "/1"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["::/0"], "::/0"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["::/1", "8000::/1"], "8000::/1"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["128.0.0.0/1"], "128.0.0.0/1"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["2001::/16"], "2001::/16"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["fe80::zz/64"], "fe80::zz/64"),
    Case("firewall.yml", "tpu_firewall_source_ranges", ["10.0.0.300/32"], "10.0.0.300/32"),
    Case("firewall.yml", "tpu_firewall_source_ranges", "10.0.0.0/8", "10.0.0.0/8"),
    *typed("firewall.yml", "tpu_firewall_allow_world", ["maybe"]),
    *typed("firewall.yml", "tpu_firewall_ssh", ["maybe"]),
    # A final line break: the checks match the whole value (cloudtpu.pod.fullmatch), not re.match
    # whose $ matches before a trailing "\n". A list shows its entries as JSON ("pod-a\\n").
    Case("teardown.yml", "tpu_teardown_nodes", ["pod-a\n"], "pod-a\\n"),
    Case("recover.yml", "tpu_recover_nodes", ["pod-a\n"], "pod-a\\n"),
    Case("teardown.yml", "tpu_teardown_queued_resource", "pod-qr\n", "pod-qr"),
    Case("provision.yml", "tpu_provision_ssh_user", "tpu\n", "tpu"),
    Case("provision.yml", "tpu_provision_accelerator_type", "v4-16\n", "v4-16"),
    Case("firewall.yml", "tpu_firewall_network", "default\n", "default"),
    Case("firewall.yml", "tpu_firewall_target_tags", ["tpu\n"], "tpu\\n"),
    # Pull mode's trust (issue 28): the repository over HTTPS or SSH (plain transports only to
    # hosts named), a full commit id unless a branch is asked for by name, the lock's toolchain
    # unless hashes are given up by name.
    pull("tpu_provision_pull_repo", "http://git.example.test/pod.git", "http://git.example.test"),
    pull("tpu_provision_pull_repo", "git://git.example.test/pod.git", "git://git.example.test"),
    pull("tpu_provision_pull_repo", "ftp://git.example.test/pod.git", "ftp://git.example.test"),
    pull("tpu_provision_pull_repo_http_hosts", "*", "*"),
    pull("tpu_provision_pull_version", "main", "main"),
    pull("tpu_provision_pull_version", "0123abc", "0123abc"),
    pull("tpu_provision_pull_version", "", "is required"),
    pull("tpu_provision_pull_version", COMMIT + "\n", COMMIT),
    pull("tpu_provision_pull_unpinned", "maybe", "maybe"),
    pull("tpu_provision_pull_ansible", "ansible==11.0.0", "ansible==11.0.0"),
    pull("tpu_provision_pull_unhashed", "maybe", "maybe"),
]


def _first_play(playbook: str) -> dict:
    """The playbook's first play, over every host of the table's inventory."""
    play = yaml.safe_load((REPO / "playbooks" / playbook).read_text())[0]
    play["hosts"] = "all"
    play["vars_files"] = [str(REPO / "playbooks" / f) for f in play.get("vars_files", [])]
    # the play runs from another folder: the task files it imports are named from playbooks/
    for task in play.get("tasks", []):
        for key in ("ansible.builtin.import_tasks", "import_tasks"):
            if key in task:
                task[key] = str(REPO / "playbooks" / task[key])
    return play


def _host_cases(playbook: str) -> list[bad_input.Case]:
    cases = [case for case in CASES if case.playbook == playbook]
    return [
        bad_input.Case(
            f"case{number:03d}",
            {case.variable: case.value},
            case.variable,
            case.shows,
            hostvars={**GOOD[playbook], **(case.base or {})},
        )
        for number, case in enumerate(cases)
    ]


@pytest.fixture(scope="module")
def refusals() -> dict[tuple[str, bool], bad_input.Refusal]:
    """Each playbook's first play over all its cases, once as a run and once with --check."""
    jobs = [(playbook, check) for playbook in GOOD for check in (False, True)]

    def one(job: tuple[str, bool]) -> dict[str, bad_input.Refusal]:
        playbook, check = job
        found, _ = bad_input.run_hosts([_first_play(playbook)], _host_cases(playbook), check=check)
        return found

    with ThreadPoolExecutor(max_workers=2) as pool:
        per_job = dict(zip(jobs, pool.map(one, jobs), strict=True))
    result = {}
    for (playbook, check), found in per_job.items():
        cases = [case for case in CASES if case.playbook == playbook]
        for host_case, case in zip(_host_cases(playbook), cases, strict=True):
            result[(case.case_id, check)] = found[host_case.case_id]
    return result


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 40, len(CASES)
    assert len({case.case_id for case in CASES}) == len(CASES), "case ids repeat"


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
@pytest.mark.parametrize("case", CASES, ids=[c.case_id for c in CASES])
def test_bad_input_is_refused_in_the_first_play(refusals, case: Case, check: bool) -> None:
    refusal = refusals[(case.case_id, check)]
    where = f"{case.case_id}{' --check' if check else ''}: {refusal.message[:500]}"
    assert refusal.failed_task, f"accepted: {where}"
    assert refusal.failed_task.startswith(("Check", "Refuse")), (refusal.failed_task, where)
    assert not refusal.changed_before, (refusal.changed_before, where)
    assert case.variable in refusal.message, where
    assert case.shows in refusal.message, where
    assert any(word in refusal.message for word in ALLOWED_WORDS), where


# One bad value per playbook, through the whole playbook against the emulator.
WHOLE = [
    ("provision.yml", {"tpu_provision_timeout": "0"}),
    ("provision.yml", {"tpu_provision_poll_interval": "abc"}),
    ("provision.yml", {"tpu_provision_pull_repo": "git://git.example.test/pod.git", **PULL_REST}),
    ("teardown.yml", {"tpu_teardown_poll_interval": "0"}),
    ("recover.yml", {"tpu_recover_timeout": "-5"}),
    ("firewall.yml", {"tpu_firewall_source_ranges": ["0.0.0.0/1", "128.0.0.0/1"]}),
]


def test_whole_playbooks_stop_before_any_node_changes(emulator: EmulatorCli, tmp_path: Path):
    before = emulator.admin("GET", "state")
    env = ansible_env(emulator.api_url, ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    jobs = [(playbook, bad, check) for playbook, bad in WHOLE for check in (False, True)]

    def one(job):
        playbook, bad, check = job
        vars_file = tmp_path / f"{jobs.index(job)}.json"
        vars_file.write_text(json.dumps({**GOOD[playbook], **bad}))
        cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", f"playbooks/{playbook}"]
        cmd += ["-e", f"@{vars_file}", *(["--check"] if check else [])]
        return run(cmd, env, timeout=300)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, jobs))
    for (playbook, bad, check), result in zip(jobs, results, strict=True):
        name = next(iter(bad))
        assert result.returncode != 0, f"{playbook} {bad} check={check}: {result.tail()}"
        assert name in result.output, f"{playbook} {bad} check={check}: {result.tail()}"
        assert "changed=0" in result.output, result.tail()
    assert emulator.mutating_calls() == {}, (
        f"API calls that change nodes: {emulator.mutating_calls()}"
    )
    assert emulator.admin("GET", "state") == before, "the emulator's nodes changed"


def test_firewall_with_the_good_values_gets_through_its_checks(tmp_path: Path) -> None:
    """The firewall cases' base values pass its checks (to the dry-run stop)."""
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps({**GOOD["firewall.yml"], "tpu_firewall_dry_run": True}))
    cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", "playbooks/firewall.yml"]
    result = run([*cmd, "-e", f"@{vars_file}"], ansible_env("http://127.0.0.1:9/v2"), timeout=300)
    assert result.returncode == 0, result.tail()


@pytest.mark.parametrize(
    ("value", "shows"),
    [({"a": 1}, '{"a": 1}'), (["tpu_node_pod_a", 5], '["tpu_node_pod_a", 5]')],
    ids=["mapping", "number-in-list"],
)
def test_bootstrap_refuses_hosts_that_are_no_host_pattern(
    tmp_path: Path, value: object, shows: str
) -> None:
    """bootstrap.yml's check play (on all:localhost, before the play whose hosts it names)."""
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps({"tpu_bootstrap_hosts": value}))
    cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", "playbooks/bootstrap.yml"]
    result = run([*cmd, "-e", f"@{vars_file}"], ansible_env("http://127.0.0.1:9/v2"), timeout=300)
    assert result.returncode != 0, result.tail()
    assert f"tpu_bootstrap_hosts is {shows}: allowed, a host pattern" in result.output, (
        result.tail()
    )
    assert "PLAY [Bootstrap | base system" not in result.output, result.tail()
