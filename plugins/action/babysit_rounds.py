# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""cloudtpu.pod.babysit_rounds: the loop of playbooks/babysit.yml. Plays cannot loop, so each
round (watch the run, decide, recover, restart: playbooks/babysit_steps/round.yml) is an
ansible-playbook of its own, started with this run's command-line options, until the
babysitter's kept state says the watch is over. The state is the file babysit.yml keeps next to
its log; each round reads it and writes it back, so the loop is as long as the run needs and
babysit.yml stopped at any point goes on from it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ansible import context
from ansible.utils.display import Display
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import private_problem
from ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_actions import SpecAction

SPEC = {
    "state": {"type": "path", "required": True},
    "playbook": {"type": "path", "required": True},
    "max_rounds": {"type": "int", "default": 10000},
}
# The environment variable that names the state file to the round playbook.
STATE_ENV = "CLOUDTPU_BABYSIT_STATE"
# Command-line options a round is started with, as the user gave them to babysit.yml:
# (key of the parsed options, the option, how it is given: value, each, flag, joined).
FORWARDED = (
    ("inventory", "--inventory", "each"),
    ("subset", "--limit", "value"),
    ("extra_vars", "--extra-vars", "each"),
    ("tags", "--tags", "joined"),
    ("skip_tags", "--skip-tags", "joined"),
    ("forks", "--forks", "value"),
    ("private_key_file", "--private-key", "value"),
    ("remote_user", "--user", "value"),
    ("connection", "--connection", "value"),
    ("timeout", "--timeout", "value"),
    ("ssh_common_args", "--ssh-common-args", "value"),
    ("ssh_extra_args", "--ssh-extra-args", "value"),
    ("sftp_extra_args", "--sftp-extra-args", "value"),
    ("scp_extra_args", "--scp-extra-args", "value"),
    ("become", "--become", "flag"),
    ("become_method", "--become-method", "value"),
    ("become_user", "--become-user", "value"),
    ("module_path", "--module-path", "each"),
    ("diff", "--diff", "flag"),
    ("force_handlers", "--force-handlers", "flag"),
)
# Prompts a round cannot answer: it runs unattended, with no terminal of its own. (Vault
# passwords, however given, reach every round through a pipe: vault_fds.)
PROMPTS = {
    "ask_pass": "--ask-pass (use an SSH key)",
    "become_ask_pass": "--ask-become-pass (give ansible_become_password in a vault file)",
}


def prompt_problem(options: Mapping[str, Any]) -> str:
    """'' or why a round cannot be started with these options (a prompt it cannot answer)."""
    asked = [text for key, text in PROMPTS.items() if options.get(key)]
    if not asked:
        return ""
    return (
        f"babysit.yml: {', '.join(asked)} asks for a password once, but every round of the "
        "babysitter is an ansible-playbook of its own that runs unattended; allowed: the "
        "options in parentheses"
    )


def round_argv(
    options: Mapping[str, Any], playbook: str, vault_ids: Sequence[tuple[str, int]] = ()
) -> list[str]:
    """The ansible-playbook command line of one round: this Python's ansible-playbook, the
    options of ``options`` (Ansible's parsed command line) that say where and how to connect and
    which variables and tags apply, a --vault-id per vault password (its label and the file
    descriptor it is read from: vault_fds), and the round's playbook. Each value is one
    argument."""
    argv = [sys.executable, "-m", "ansible.cli.playbook"]
    argv.extend(f"--vault-id={label}@/dev/fd/{fd}" for label, fd in vault_ids)
    for key, option, how in FORWARDED:
        value = options.get(key)
        if value in (None, "", (), [], False):
            continue
        if how == "flag":
            argv.append(option)
        elif how == "each":
            argv.extend(f"{option}={item}" for item in value)
        elif how == "joined":
            argv.append(f"{option}={','.join(value)}")
        else:
            argv.append(f"{option}={value}")
    verbosity = int(options.get("verbosity") or 0)
    if verbosity:
        argv.append("-" + "v" * verbosity)
    argv.append(playbook)
    return argv


@contextmanager
def vault_fds(secrets: Sequence[tuple[str, bytes]]) -> Iterator[list[tuple[str, int]]]:
    """The vault passwords this run holds (however they were given: a file, a script, a
    prompt), each in a pipe a round reads as its --vault-id file: (label, read end) pairs, open
    for the round's start and closed after it. Never on disk nor on a command line."""
    opened: list[tuple[str, int]] = []
    try:
        for label, secret in secrets:
            read_end, write_end = os.pipe()
            opened.append((label, read_end))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(secret)
        yield opened
    finally:
        for _label, fd in opened:
            os.close(fd)


def loaded_vault_secrets(loader: Any) -> list[tuple[str, bytes]]:
    """(label, password) of every vault secret the controller loaded for this run."""
    vault = getattr(loader, "_vault", None)
    found = []
    for label, secret in getattr(vault, "secrets", None) or []:
        value = getattr(secret, "bytes", None)
        if value:
            found.append((str(label), bytes(value)))
    return found


def read_state(path: str) -> dict[str, Any]:
    """The kept state of the run: a JSON object in a file of this user that no other user may
    write, read without following a symbolic link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        problem = private_problem(path, os.fstat(handle.fileno()), "file")
        if problem:
            raise ValueError(problem)
        state = json.loads(handle.read().decode("utf-8"))
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds no babysitter state (not a JSON object)")
    return state


def _over(state: Mapping[str, Any]) -> bool:
    over = state.get("over")
    return over is True or str(over).strip().lower() in ("true", "yes", "1")


def run_rounds(
    state_path: str,
    start_round: Callable[[int], int],
    show: Callable[[str], None],
    max_rounds: int,
) -> dict[str, Any]:
    """Start rounds until the kept state says the watch is over; this task's result."""
    state = read_state(state_path)
    rounds = 0
    while not _over(state):
        if rounds >= max_rounds:
            return {
                "failed": True,
                "rounds": rounds,
                "state": state,
                "msg": f"babysit.yml: {rounds} rounds and the watch is not over; run babysit.yml "
                "again to go on watching",
            }
        rounds += 1
        show(
            f"babysit: round {rounds}: run {state.get('run_id')}, {state.get('recoveries', 0)} "
            f"recoveries so far"
        )
        code = start_round(rounds)
        state = read_state(state_path)
        if code != 0 and not _over(state):
            return {
                "failed": True,
                "rounds": rounds,
                "state": state,
                "msg": f"babysit.yml: round {rounds} ended with exit code {code} (its output above "
                f"says why) before the watch was over; the babysitter's state is kept in "
                f"{state_path}: run babysit.yml again to go on from it",
            }
    return {"changed": rounds > 0, "rounds": rounds, "state": state}


def start_child(
    argv: list[str],
    env: Mapping[str, str],
    show: Callable[[str], None],
    pass_fds: Sequence[int] = (),
) -> int:
    """Run one round to its end, its output shown line by line (Ansible's worker processes write
    to /dev/null, so the lines go through the controller's display); a SIGTERM to this process
    (the controller ends its workers so on Ctrl-C) ends the round too."""
    child = subprocess.Popen(
        argv,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=tuple(pass_fds),
        text=True,
        errors="replace",
    )

    def stop(signum: int, _frame: Any) -> None:
        child.terminate()
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        for line in child.stdout or ():
            show(line.rstrip("\n"))
        return child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if child.poll() is None:
            child.terminate()
            child.wait()


class ActionModule(SpecAction):
    """Start babysit.yml's rounds, one ansible-playbook each, until the watch is over."""

    SPEC = SPEC

    def act(self, result: dict, args: dict[str, Any], task_vars: dict[str, Any]) -> dict:
        options = dict(context.CLIARGS)
        problem = prompt_problem(options)
        if problem:
            return dict(result, failed=True, msg=problem)
        env = dict(os.environ, **{STATE_ENV: args["state"]})
        secrets = loaded_vault_secrets(self._loader)
        show = Display().display

        def a_round(_number: int) -> int:
            with vault_fds(secrets) as fds:
                argv = round_argv(options, args["playbook"], fds)
                return start_child(argv, env, show, [fd for _label, fd in fds])

        try:
            result.update(run_rounds(args["state"], a_round, show, args["max_rounds"]))
        except (OSError, ValueError) as error:
            return dict(result, failed=True, msg=f"babysit.yml: the kept state: {error}")
        return result
