# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The pull bootstrap's results as the workers publish them and the controller reads them.

A node made by ``playbooks/provision.yml`` with ``tpu_provision_bootstrap=pull`` runs its
startup-script (``playbooks/templates/pull_startup.sh.j2``) at every boot of every worker. The
script publishes how it goes as *guest attributes* of the worker's VM, through the VM's metadata
server (``PUT http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes/
NAMESPACE/KEY``), and the controller reads them through the TPU API's
``nodes.getGuestAttributes``, one call per node for all its workers: no SSH.

``NAMESPACE/RESULT_KEY`` holds a small JSON object: ``{"state": "running", "boot": B}`` as the
script starts, ``{"state": "done", "rc": N, "boot": B, "seconds": S}`` when it ends (``B``: the
worker's boot, the start of its PID 1, in seconds since the epoch; ``S``: how long it ran). When
``N`` is not 0, ``NAMESPACE/LOG_KEY`` holds the end of the worker's pull log, published first.
Guest attributes belong to the VM and outlive a reboot: the script replaces the result first
thing at boot, so the result of an earlier boot is seen only between a reboot and the start of
the script (on a TPU VM the startup-script starts with the guest environment, seconds after the
boot).

What the workers install and clone is checked here too: the collection's hashed lock of their
toolchain (:func:`read_lock`) and the repository they clone (:func:`repo_problem`), with which
``tpu_pull_options`` checks provision.yml's variables.

Everything here but :func:`look` and :func:`read_lock` is a pure function of its arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    plain_http_allowed,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

NAMESPACE = "cloudtpu"
RESULT_KEY = "pull-result"
LOG_KEY = "pull-log"
# The end of the log a failed pull publishes: lines, and bytes at most.
LOG_LINES = 30
LOG_BYTES = 3000
# States of a worker's pull as the controller sees it.
PENDING, RUNNING, DONE = "pending", "running", "done"
# Node states whose workers run (and can publish); the others cannot report again.
RUNNING_NODE_STATES = ("READY", "CREATING", "STARTING", "RESTARTING", "REPAIRING", "REIMAGING")


def parse_result(value: Any) -> dict[str, Any]:
    """A published result as ``{state, rc, boot, seconds}``; ``pending`` when there is none,
    and ``running`` when it cannot be read (a worker's half-written value is not a result)."""
    empty = {"state": PENDING, "rc": None, "boot": None, "seconds": None}
    if value in (None, ""):
        return empty
    try:
        data = json.loads(str(value))
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        return dict(empty, state=RUNNING)

    def number(key: str) -> int | None:
        item = data.get(key)
        return item if isinstance(item, int) and not isinstance(item, bool) else None

    done = data.get("state") == DONE and number("rc") is not None
    return {
        "state": DONE if done else RUNNING,
        "rc": number("rc") if done else None,
        "boot": number("boot"),
        "seconds": number("seconds") if done else None,
    }


def worker_results(
    node_id: str, node: Mapping[str, Any] | None, guest: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One entry per worker of a node: ``{node, worker_id, state, rc, boot, seconds, log}`` from
    the node (None: it does not exist) and its getGuestAttributes answer (one entry per worker,
    in worker order)."""
    endpoints = (node or {}).get("networkEndpoints") or []
    count = max(len(endpoints), len(guest))
    out = []
    for worker in range(count):
        entry = guest[worker] if worker < len(guest) else {}
        items = ((entry.get("queryValue") or {}).get("items")) or []
        found = {
            str(item.get("key")): item.get("value")
            for item in items
            if isinstance(item, Mapping) and item.get("namespace") == NAMESPACE
        }
        result = parse_result(found.get(RESULT_KEY))
        failed = result["state"] == DONE and result["rc"] != 0
        log = str(found.get(LOG_KEY) or "") if failed else ""
        out.append({"node": node_id, "worker_id": worker, **result, "log": log})
    return out


def tally(workers: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many workers are done (and of those, failed), running and not started."""
    done = [w for w in workers if w.get("state") == DONE]
    return {
        "total": len(workers),
        "done": len(done),
        # not "failed": Ansible reads that key of a result as the task's own failure
        "failed_workers": len([w for w in done if w.get("rc") != 0]),
        "running": len([w for w in workers if w.get("state") == RUNNING]),
        "pending": len([w for w in workers if w.get("state") == PENDING]),
    }


def progress_text(counts: Mapping[str, int], seconds: float) -> str:
    """One line per poll: ``pull bootstrap: 3 of 8 workers done, 1 failed, 4 running (95 s)``."""
    parts = [f"{counts['done']} of {counts['total']} workers done"]
    if counts.get("failed_workers"):
        parts.append(f"{counts['failed_workers']} failed")
    if counts.get("running"):
        parts.append(f"{counts['running']} running")
    if counts.get("pending"):
        parts.append(f"{counts['pending']} not started")
    return f"pull bootstrap: {', '.join(parts)} ({max(0.0, seconds):.0f} s)"


def worker_line(worker: Mapping[str, Any]) -> str:
    """What a finished worker's result says: ``pod-a worker 0: bootstrapped itself, ansible-pull
    exit code 0 after 312 s``."""
    name = f"{worker['node']} worker {worker['worker_id']}"
    after = f" after {worker['seconds']} s" if worker.get("seconds") is not None else ""
    if worker.get("rc") == 0:
        return f"{name}: bootstrapped itself, ansible-pull exit code 0{after}"
    return f"{name}: the pull bootstrap ended with exit code {worker.get('rc')}{after}"


def lost_nodes(nodes: Mapping[str, Mapping[str, Any] | None]) -> list[str]:
    """Problems of nodes whose workers cannot report: gone, or in a state without workers."""
    problems = []
    for node_id, node in nodes.items():
        if node is None:
            problems.append(f"TPU node {node_id} does not exist (any more).")
        elif str(node.get("state") or "") not in RUNNING_NODE_STATES:
            problems.append(
                f"TPU node {node_id} is {node.get('state')}: its workers cannot bootstrap; "
                "recreate it with playbooks/recover.yml."
            )
    return problems


def outcome(
    workers: Sequence[Mapping[str, Any]], problems: Sequence[str], timed_out: bool, timeout: float
) -> dict[str, Any]:
    """The task's result once the wait ends: every worker done, a node lost, or the time up."""
    counts = tally(workers)
    messages = list(problems)
    for worker in workers:
        if worker.get("state") == DONE and worker.get("rc") != 0:
            tail = " | ".join(line for line in str(worker.get("log") or "").splitlines() if line)
            messages.append(
                worker_line(worker)
                + (f"; the end of /var/log/cloudtpu-pull.log: {tail}" if tail else "")
            )
    if timed_out:
        late = [
            f"{w['node']} worker {w['worker_id']} ({w['state']})"
            for w in workers
            if w.get("state") != DONE
        ]
        messages.append(
            f"The pull bootstrap has not finished after {timeout:.0f} s on {', '.join(late)}. "
            "See the journal of google-startup-scripts.service on a TPU VM "
            "(cloudtpu-startup.service on the emulator) and /var/log/cloudtpu-pull.log; a worker "
            "still 'pending' never published a result (no metadata server reached?)."
        )
    return {
        "changed": False,
        "failed": bool(messages),
        "msg": " ".join(messages)
        if messages
        else f"All {counts['total']} workers bootstrapped themselves (ansible-pull exit code 0).",
        "workers": [dict(w) for w in workers],
        **counts,
    }


def look(client: Any, project: str, zone: str, node_ids: Sequence[str]) -> dict[str, Any]:
    """One look at the nodes and their workers' published results (two API calls a READY node,
    one for the others, whose workers count as not started): ``{workers, problems, nodes}`` with
    ``nodes`` the states of the nodes."""
    nodes: dict[str, Mapping[str, Any] | None] = {}
    workers: list[dict[str, Any]] = []
    for node_id in node_ids:
        node = client.find_node(project, zone, node_id)
        nodes[node_id] = node
        guest = []
        if node is not None and node.get("state") == "READY":
            guest = client.get_guest_attributes(project, zone, node_id, f"{NAMESPACE}/")
        workers.extend(worker_results(node_id, node, guest))
    return {
        "workers": workers,
        "problems": lost_nodes(nodes),
        "nodes": {n: (node or {}).get("state", "ABSENT") for n, node in nodes.items()},
    }


# -- what the workers install: the collection's hashed lock ----------------------------------

# The toolchain the workers install, with hashes: the lock beside the startup script's template,
# compiled by `make pull-lock` from pull_requirements.in (the versions' one home; tests keep its
# pins equal to requirements.txt's). Its pins are the defaults of pull mode's variables.
LOCK_NAME = "playbooks/templates/pull_requirements.txt"
LOCK_PATH = Path(__file__).resolve().parents[2] / LOCK_NAME
ANSIBLE_NAME = "ansible"
REQUIREMENT_NAMES = ("requests", "google-auth")
UV_NAME = "uv"
# One entry of the lock: "name==version[ ; marker] \" then its indented --hash and comment lines.
_LOCK_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!+_-]+)[ ;\\]")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> dict[str, tuple[str, str]]:
    """The entries of a lock compiled with hashes: canonical name -> (version, the entry's text,
    its --hash lines included). Comment lines at the top level are left out."""
    entries: dict[str, tuple[str, str]] = {}
    name = ""
    for line in text.splitlines():
        if not line.strip() or (line.startswith("#") and not line[:1].isspace()):
            name = ""
            continue
        if line[:1].isspace():
            if name:
                version, body = entries[name]
                entries[name] = (version, f"{body}{line}\n")
            continue
        match = _LOCK_PIN.match(line + " ")
        if not match:
            raise ValueError(f"{LOCK_NAME}: {line!r} is not a pinned requirement (name==version)")
        name = _canonical(match.group(1))
        entries[name] = (match.group(2), f"{line}\n")
    return entries


def read_lock(path: Path = LOCK_PATH) -> dict[str, Any]:
    """The lock at ``path``: ``entries`` (as parse_lock returns them), ``problem`` (why pull mode
    cannot use it, ``''`` when it can), the default pins ``ansible``, ``requirements`` (a tuple)
    and ``uv_version``, and the texts for the worker: ``uv_lock`` (uv alone, in a venv of its
    own) and ``lock`` (everything else)."""
    problem = ""
    try:
        entries = parse_lock(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        entries = {}
        problem = f"the collection's lock {LOCK_NAME} could not be read ({exc}): reinstall it."
    missing = [n for n in (ANSIBLE_NAME, *REQUIREMENT_NAMES, UV_NAME) if n not in entries]
    if missing and not problem:
        problem = f"the collection's lock {LOCK_NAME} lacks {', '.join(missing)}."

    def pin(name: str) -> str:
        return f"{name}=={entries[name][0]}" if name in entries else ""

    return {
        "entries": entries,
        "problem": problem,
        "ansible": pin(ANSIBLE_NAME),
        "requirements": tuple(pin(name) for name in REQUIREMENT_NAMES),
        "uv_version": entries[UV_NAME][0] if UV_NAME in entries else "",
        "lock": "".join(entry[1] for name, entry in entries.items() if name != UV_NAME),
        "uv_lock": entries[UV_NAME][1] if UV_NAME in entries else "",
    }


# -- what the workers clone -------------------------------------------------------------------

# git URLs the workers clone. No spaces, quotes, backslashes or control characters anywhere;
# no host or user that git or ssh could read as an option (a leading "-").
_URL_CHARS = re.compile(r"^[^\s'\"\\\x00-\x1f\x7f]{1,2000}\Z")
_SCP = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:(?!//)[^\s]+\Z")
REPO_ALLOWED = (
    "an https:// or ssh:// URL, user@host:path (SSH), or file:// (a repository on the worker);"
    " http:// and git:// (no encryption, no authentication) only to a loopback address or to a"
    " host named in tpu_provision_pull_repo_http_hosts"
)


def repo_problem(value: Any, http_hosts: list[str]) -> str:
    """Why the workers must not clone ``value`` (tpu_provision_pull_repo); ``''`` when they may.
    ``http_hosts``: the hosts named in tpu_provision_pull_repo_http_hosts, as parse_http_hosts
    returns them. http:// and git:// follow the API's rule (plain_http_allowed)."""
    named = ", ".join(http_hosts) if http_hosts else "none"
    allowed = f"{REPO_ALLOWED} (now {named})"

    def refused(reason: str, hint: str = "") -> str:
        return f"tpu_provision_pull_repo is {_shown(value)}: {reason}; allowed: {allowed}.{hint}"

    if not isinstance(value, str) or not _URL_CHARS.match(value):
        return refused("not a git URL (or it holds a space, a quote or a control character)")
    if "://" not in value:
        if _SCP.match(value):
            return ""  # user@host:path, git's short form of ssh://
        return refused("not a git URL")
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
    except ValueError as exc:
        return refused(f"not a git URL ({exc})")
    scheme = parts.scheme.lower()
    if "@" in parts.netloc and (parts.password is not None or scheme in ("https", "http")):
        # shown without what stands before the @: it may be a token
        hidden = f"{parts.scheme}://<hidden>@{parts.netloc.rsplit('@', 1)[1]}{parts.path}"
        return (
            f"tpu_provision_pull_repo is {_shown(hidden)}: it carries credentials (a password or "
            "token before the @), which the node's metadata and every worker's log would keep; "
            f"allowed: {allowed}, with no credentials in it (a public https:// URL, or ssh:// "
            "with a deploy key)."
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            return refused("file:// names a folder on the worker itself: file:///path")
        return ""
    if scheme not in ("https", "ssh", "http", "git"):
        return refused(f"the scheme {scheme}:// is not one git fetches over safely")
    if not host or host.startswith("-") or not parts.path.strip("/"):
        return refused("it has no host or no repository path")
    if scheme in ("http", "git") and not plain_http_allowed(host, http_hosts):
        return refused(
            f"{scheme}:// to {host} neither encrypts nor authenticates: anyone on the way can "
            "read the repository or answer in its place, and every worker runs what it gets as "
            "root at every boot",
            f" To allow it on a network you trust, name {host} in "
            "tpu_provision_pull_repo_http_hosts.",
        )
    return ""
