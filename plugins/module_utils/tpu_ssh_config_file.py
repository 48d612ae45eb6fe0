# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""One SSH config file of playbooks/ssh_config.yml: its checks, its managed block, its message.

The playbook includes ssh_config_steps/file.yml once per file (the files and their options:
module_utils/tpu_ssh_config_record.py); :func:`file_plan` says what that file gets:

- ``entries``: the workers' entries with the file's options in place of Ansible's;
- ``problem``: why the file's options or the inventory refuse it (``''`` when fine), each
  variable named with its value and what is allowed;
- ``entry_problems``: per worker (its inventory name), why its entry cannot be written;
- ``block``: the managed block, one ``Host`` entry per worker, then ``Host *`` (``''`` while
  anything is refused);
- ``message``: how to connect, said after the block is written.

An entry (one per worker) is ``{host, hostname, user, port, worker_id, identity_file,
known_hosts}``, all text, as the playbook notes them from how Ansible reaches each worker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_forwards import (
    forward_lines,
    forwards_problem,
)

# What each value may be (a value that is not text never matches).
PATH = r"/[^\n]*[^/]"
IDENTITY_FILE = r"([^\s\"'#]+)?"
PROXY_JUMP = r"[A-Za-z0-9_.@:,\[\]-]*"
USER = r"[a-z_][a-z0-9_.-]*"
NAME = r"[^\n]+"
HOST = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
HOSTNAME = r"[A-Za-z0-9][A-Za-z0-9_.:-]*"
PORT = r"[0-9]{1,5}"
KNOWN_HOSTS = r"[^\n\"]*"
EXIT_ON_FAILURE = "ExitOnForwardFailure yes"


def _matches(value: Any, pattern: str) -> bool:
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def options_problem(options: Mapping[str, Any], hosts: Sequence[str]) -> str:
    """Why the file cannot be written (``''`` when it can): its ``path``, ``identity_file``,
    ``proxy_jump``, ``user``, ``name`` and ``forwards``, and the ``group``'s ``hosts``."""
    problems = []
    path = options.get("path")
    if not _matches(path, PATH):
        problems.append(
            f"tpu_ssh_config_path is '{path}', it must be a file path (absolute, or starting "
            "with ~/)."
        )
    if not hosts:
        problems.append(
            f"group '{options.get('group')}' (tpu_ssh_config_group) has no hosts in this inventory."
        )
    identity = options.get("identity_file")
    if not _matches(identity, IDENTITY_FILE):
        problems.append(
            f"tpu_ssh_config_identity_file is '{identity}', it must be one path without spaces, "
            "quotes or #."
        )
    jump = options.get("proxy_jump")
    if not _matches(jump, PROXY_JUMP):
        problems.append(
            f"tpu_ssh_config_proxy_jump is '{jump}', it must be [user@]host[:port] "
            "(comma-separated for several hops)."
        )
    user = options.get("user")
    if not _matches(user, f"({USER})?"):
        problems.append(f"tpu_ssh_config_user is '{user}', it must be a user name.")
    if not _matches(options.get("name"), NAME):
        problems.append("tpu_ssh_config_name must be one line.")
    problems.append(forwards_problem(options.get("forwards")))
    text = " ".join(p for p in problems if p)
    return f"Refusing to write the SSH config: {text}" if text else ""


def entry_problem(entry: Mapping[str, Any]) -> str:
    """Why one worker's entry cannot be written (``''`` when it can)."""
    port = entry.get("port")
    checks = (
        (
            _matches(entry.get("host"), HOST),
            "its inventory name must be letters, digits, . _ and - (a *, ? or ! would make the "
            "Host line a pattern that matches other hosts).",
        ),
        (
            _matches(entry.get("hostname"), HOSTNAME),
            f"its ansible_host '{entry.get('hostname')}' must be one address or DNS name.",
        ),
        (
            _matches(entry.get("user"), USER),
            f"its user '{entry.get('user')}' (tpu_ssh_config_user, else ansible_user) must be a "
            "user name.",
        ),
        (
            _matches(port, PORT) and 1 <= int(port) <= 65535,
            f"its port '{port}' (tpu_ssh_config_port, else ansible_port) must be a number from 1 "
            "to 65535.",
        ),
        (
            _matches(entry.get("identity_file"), IDENTITY_FILE),
            f"its key '{entry.get('identity_file')}' (ansible_ssh_private_key_file, else "
            "ANSIBLE_PRIVATE_KEY_FILE) must be one path without spaces, quotes or #.",
        ),
        (
            _matches(entry.get("known_hosts"), KNOWN_HOSTS),
            f"its UserKnownHostsFile '{entry.get('known_hosts')}' (from Ansible's ssh arguments) "
            "must be one line without quotes.",
        ),
    )
    text = " ".join(message for fine, message in checks if not fine)
    if not text:
        return ""
    return f"Worker '{entry.get('host')}' cannot get an SSH config entry: {text}"


def config_block(entries: Sequence[Mapping[str, Any]], proxy_jump: str, forwards: Any) -> str:
    """The managed block: a ``Host`` entry per worker, worker 0's with the port forwards, each
    followed by an empty line, then ``Host *`` so that lines after the block keep applying to
    every host."""
    forwards_text = forward_lines(forwards)
    lines = []
    for entry in entries:
        lines += [
            f"Host {entry['host']}",
            f"    HostName {entry['hostname']}",
            f"    User {entry['user']}",
            f"    Port {entry['port']}",
        ]
        if entry.get("identity_file"):
            lines.append(f"    IdentityFile {entry['identity_file']}")
        if entry.get("known_hosts"):
            lines.append(f'    UserKnownHostsFile "{entry["known_hosts"]}"')
        if proxy_jump:
            lines.append(f"    ProxyJump {proxy_jump}")
        if str(entry.get("worker_id")) == "0":
            lines += [f"    {line}" for line in forwards_text]
        lines += ["    StrictHostKeyChecking accept-new", "    ServerAliveInterval 30", ""]
    lines.append("Host *")
    return "\n".join(lines) + "\n"


def connect_message(
    entries: Sequence[Mapping[str, Any]], path: str, home: str, forwards: Any
) -> str:
    """How to connect: ssh and mosh to the first worker (with ``-F PATH`` for a file other than
    ~/.ssh/config), and the command that holds each pod's port forwards open."""
    hint = "" if path == f"{home}/.ssh/config" else f"-F {path} "
    mosh_hint = f"--ssh='ssh {hint.strip()}' " if hint else ""
    first = entries[0]["host"]
    text = (
        f"{len(entries)} worker(s) in {path}; for example `ssh {hint}{first}` or "
        f"`mosh {mosh_hint}{first} -- byobu` (mosh needs UDP 60000-61000 open: "
        "playbooks/firewall.yml). "
    )
    tunnels = ", ".join(
        line.replace("LocalForward ", "").replace(" ", " -> ")
        for line in forward_lines(forwards)
        if line != EXIT_ON_FAILURE
    )
    if forwards:
        for entry in entries:
            if str(entry.get("worker_id")) == "0":
                text += f"`ssh {hint}-N {entry['host']}` holds its port forwards open: {tunnels}. "
    return text


def file_plan(
    entries: Sequence[Mapping[str, Any]], file: Mapping[str, Any], play: Mapping[str, Any]
) -> dict[str, Any]:
    """See the module's docstring. ``entries``: how Ansible reaches each worker; ``file``: the
    file's ``path``, ``user``, ``identity_file``, ``proxy_jump``, ``port`` and ``forwards``
    (module_utils/tpu_ssh_config_record.py); ``play``: the block's ``name``, the ``group`` and
    its ``hosts``, and the user's ``home``. The file's ``user``, ``identity_file`` and ``port``,
    when set, stand in every entry for Ansible's."""
    overrides = {
        "user": file.get("user"),
        "identity_file": file.get("identity_file"),
        "port": "" if file.get("port") is None else str(file.get("port")),
    }
    overrides = {key: value for key, value in overrides.items() if value}
    entries = [{**entry, **overrides} for entry in entries]
    options = {**file, "name": play.get("name"), "group": play.get("group")}
    problem = options_problem(options, play.get("hosts") or [])
    entry_problems = {str(entry.get("host")): entry_problem(entry) for entry in entries}
    fine = not problem and not any(entry_problems.values())
    forwards = file.get("forwards")
    block = config_block(entries, str(file.get("proxy_jump") or ""), forwards) if fine else ""
    message = ""
    if fine and entries:
        message = connect_message(entries, str(file.get("path")), str(play.get("home")), forwards)
    return {
        "entries": entries,
        "problem": problem,
        "entry_problems": entry_problems,
        "block": block,
        "message": message,
    }
