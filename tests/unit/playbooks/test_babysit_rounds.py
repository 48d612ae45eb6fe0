"""cloudtpu.pod.babysit_rounds: babysit.yml's loop of rounds, each an ansible-playbook of its own.

The command line of a round (the options the user gave, each one argument), the prompts it
refuses, the loop over a kept state that a round rewrites (with a stand-in round), and the size of
babysit.yml, which no longer grows with the recoveries allowed. The rounds themselves run on the
emulated pod in tests/integration/test_run_playbook.py, test_babysit_resume.py and the babysit
journey."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.action.babysit_rounds import (
    STATE_ENV,
    prompt_problem,
    read_state,
    round_argv,
    run_rounds,
    start_child,
    vault_fds,
)

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def test_a_round_gets_the_users_options_each_as_one_argument():
    options = {
        "inventory": ("/p/inv one", "/p/inv2.yml"),
        "subset": "pod-a",
        "extra_vars": ("tpu_babysit_interval=2", "@vars.yml", '{"cmd": "echo {{ x }}"}'),
        "tags": ("python", "libtpu"),
        "skip_tags": (),
        "forks": 5,
        "private_key_file": "/k/id",
        "remote_user": "tpu",
        "ssh_common_args": "-o UserKnownHostsFile=/k/known",
        "become": False,
        # vault options are not passed on: the loaded passwords are (vault_fds)
        "vault_password_files": ("/k/vault",),
        "verbosity": 2,
        "check": False,
        "ask_vault_pass": False,
    }
    argv = round_argv(options, "/c/playbooks/babysit_steps/round.yml")
    assert argv[:3] == [sys.executable, "-m", "ansible.cli.playbook"]
    assert argv[3:] == [
        "--inventory=/p/inv one",
        "--inventory=/p/inv2.yml",
        "--limit=pod-a",
        "--extra-vars=tpu_babysit_interval=2",
        "--extra-vars=@vars.yml",
        '--extra-vars={"cmd": "echo {{ x }}"}',
        "--tags=python,libtpu",
        "--forks=5",
        "--private-key=/k/id",
        "--user=tpu",
        "--ssh-common-args=-o UserKnownHostsFile=/k/known",
        "-vv",
        "/c/playbooks/babysit_steps/round.yml",
    ]


def test_the_command_line_parses_back_to_the_same_options():
    # What ansible-playbook itself makes of the round's command line: the same values.
    from ansible.cli.playbook import PlaybookCLI

    options = {
        "inventory": ("/p/inv",),
        "subset": "pod-a,pod-b",
        "extra_vars": ("a=1 b=2", "@x.yml"),
        "tags": ("python",),
        "skip_tags": ("nfs", "storage"),
        "become": True,
        "become_user": "root",
        "ssh_extra_args": "-o ServerAliveInterval=30",
        "verbosity": 3,
        "diff": True,
    }
    argv = round_argv(options, "round.yml")
    cli = PlaybookCLI(["ansible-playbook", *argv[3:]])
    cli.init_parser()
    parsed = vars(cli.parser.parse_args(argv[3:]))
    assert parsed["subset"] == "pod-a,pod-b"
    # (an @file is made absolute, as for the run itself: the round starts in the same folder)
    assert parsed["extra_vars"][0] == "a=1 b=2"
    assert parsed["extra_vars"][1] == "@" + str(Path("x.yml").resolve())
    assert parsed["tags"] == ["python"] and parsed["skip_tags"] == ["nfs,storage"]
    assert parsed["become"] and parsed["become_user"] == "root" and parsed["diff"]
    assert parsed["ssh_extra_args"] == "-o ServerAliveInterval=30"
    assert parsed["verbosity"] == 3 and parsed["args"] == ["round.yml"]


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("become_ask_pass", "ansible_become_password"),
        ("ask_pass", "SSH key"),
    ],
)
def test_a_prompt_the_rounds_cannot_answer_is_refused(key, words):
    problem = prompt_problem({key: True})
    assert "unattended" in problem and words in problem
    assert prompt_problem({key: False}) == ""


def test_vault_passwords_reach_a_round_through_pipes_and_nothing_else(tmp_path):
    # However the user gave them (a file, a script, --ask-vault-pass), the passwords the
    # controller holds open an encrypted -e @file in the round: a real ansible-playbook here.
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = b"correct horse battery staple"
    vault = VaultLib([("team", VaultSecret(secret))])
    encrypted = tmp_path / "secrets.yml"
    encrypted.write_bytes(vault.encrypt(b"token_check: opened\n", vault_id="team"))
    play = tmp_path / "round.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.assert:\n        that:\n"
        "          - token_check == 'opened'\n"
        f"          - lookup('env', '{STATE_ENV}') == 'state.json'\n",
        encoding="utf-8",
    )
    options = {
        "inventory": ("localhost,",),
        "extra_vars": (f"@{encrypted}",),
        "connection": "local",
    }
    lines: list[str] = []
    with vault_fds([("team", secret)]) as fds:
        argv = round_argv(options, str(play), fds)
        assert argv[3].startswith("--vault-id=team@/dev/fd/")
        assert not any(secret.decode() in arg for arg in argv)
        env = dict(
            os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), **{STATE_ENV: "state.json"}
        )
        code = start_child(argv, env, lines.append, [fd for _label, fd in fds])
    assert code == 0, "\n".join(lines)
    assert any("ok=1" in line for line in lines), lines
    # without the pipe the same round cannot open the file
    code = start_child(round_argv(options, str(play)), env, lines.append)
    assert code != 0


def write_state(path: Path, **state) -> None:
    path.write_text(json.dumps(state), encoding="utf-8")
    path.chmod(0o600)


def test_rounds_start_until_the_kept_state_says_the_watch_is_over(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1", recoveries=0, over=False)
    shown: list[str] = []

    def a_round(number: int) -> int:
        # a stand-in round: the first recovers, the second restarts, the third sees it done
        over = number == 3
        write_state(state, run_id=f"r{number + 1}", recoveries=min(number, 2), over=over)
        return 0

    result = run_rounds(str(state), a_round, shown.append, max_rounds=100)
    assert result["rounds"] == 3 and result["changed"] and not result.get("failed")
    assert result["state"] == {"run_id": "r4", "recoveries": 2, "over": True}
    assert shown[0] == "babysit: round 1: run r1, 0 recoveries so far"
    assert shown[2] == "babysit: round 3: run r3, 2 recoveries so far"


def test_a_watch_that_is_over_starts_no_round(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1", over="True")
    result = run_rounds(str(state), lambda n: pytest.fail("a round started"), print, 10)
    assert result["rounds"] == 0 and not result["changed"]


def test_a_round_that_fails_before_the_end_stops_the_loop_saying_where_the_state_is(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1", over=False)
    result = run_rounds(str(state), lambda n: 2, lambda line: None, 10)
    assert result["failed"] and result["rounds"] == 1
    assert "round 1 ended with exit code 2" in result["msg"] and str(state) in result["msg"]


def test_a_round_that_fails_after_the_watch_ended_is_not_a_failure_of_the_loop(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1", over=False)

    def a_round(number: int) -> int:
        write_state(state, run_id="r1", over=True, action="failed")
        return 2

    result = run_rounds(str(state), a_round, lambda line: None, 10)
    assert not result.get("failed") and result["state"]["action"] == "failed"


def test_the_rounds_stop_at_max_rounds(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1", over=False)
    result = run_rounds(str(state), lambda n: 0, lambda line: None, 4)
    assert result["failed"] and result["rounds"] == 4 and "run babysit.yml again" in result["msg"]


def test_a_state_file_of_another_kind_or_open_to_others_is_not_read(tmp_path):
    state = tmp_path / "run.json"
    write_state(state, run_id="r1")
    state.chmod(0o666)
    with pytest.raises(ValueError, match="writable by other users"):
        read_state(str(state))
    state.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(state)
    with pytest.raises(OSError):
        read_state(str(link))
    write_state(state, run_id="r1")
    state.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="not a JSON object"):
        read_state(str(state))


def list_tasks(*args: str) -> list[str]:
    out = subprocess.run(
        [
            BIN / "ansible-playbook",
            "-i",
            "localhost,",
            "playbooks/babysit.yml",
            "--list-tasks",
            *args,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")),
    ).stdout
    return [line for line in out.splitlines() if "TAGS:" in line and "play #" not in line]


def test_babysit_is_the_same_size_for_3_and_for_30_recoveries():
    few = list_tasks("-e", "tpu_babysit_max_recoveries=3")
    many = list_tasks("-e", "tpu_babysit_max_recoveries=30")
    assert few == many
    # the preamble, one task that runs the rounds, and the report: no copy per recovery
    assert len(few) < 30, few
    assert sum("Run the rounds" in line for line in few) == 1
