# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Push or pull bootstrap for playbooks/provision.yml: the pull variables, checked and made safe
for the startup script (templates/pull_startup.sh.j2) that bootstraps each worker by itself.

:func:`pull_options` is the filter of the same name (its documentation says what it takes and
returns); the lock of the workers' toolchain and the check of the repository they clone are in
:mod:`tpu_pull`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    HTTP_HOSTS_ENV,
    base_url_problem,
    parse_http_hosts,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown, number_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull import (
    LOCK_NAME,
    LOG_BYTES,
    LOG_KEY,
    LOG_LINES,
    NAMESPACE,
    REPO_ALLOWED,
    RESULT_KEY,
    read_lock,
    repo_problem,
)

MODES = ("push", "pull")
INSTALLERS = ("uv", "pip")
AUTH_KINDS = ("machineaccount", "accesstoken")
DEFAULT_TIMEOUT = 3600

# The toolchain the workers install, with hashes (module_utils/tpu_pull.py reads the lock): its
# pins are the defaults below.
TOOLCHAIN = read_lock()
LOCK_PROBLEM = TOOLCHAIN["problem"]
DEFAULT_ANSIBLE = TOOLCHAIN["ansible"]
DEFAULT_REQUIREMENTS = TOOLCHAIN["requirements"]
DEFAULT_UV_VERSION = TOOLCHAIN["uv_version"]

# A full commit id: SHA-1 (40 hex digits) or SHA-256 (64).
_COMMIT = re.compile(r"^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})\Z")
COMMIT_ALLOWED = (
    "a full commit id (40 hex digits, or 64 in a sha256 repository), such as the output of"
    " `git rev-parse HEAD` in the clone the workers should run, or a branch or tag only with"
    " tpu_provision_pull_unpinned=true (the workers then run whatever it points to when they boot)"
)
# A branch or tag name (git check-ref-format, narrowed): no "..", "//", "@{", leading "-" or
# ".", trailing "/", "." or ".lock".
_VERSION = re.compile(
    r"^(?![-./])(?!.*(?:\.\.|//|/\.|\.lock(?:/|\Z)))[A-Za-z0-9._/-]{1,200}(?<![./])\Z"
)
_TAG = re.compile(r"^[A-Za-z0-9_-]+\Z")
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([<>=!~]=?[A-Za-z0-9.*+!-]+,?)*\Z"
)
_ENDPOINT = re.compile(r"^https?://[A-Za-z0-9.:\[\]_-]+(/[A-Za-z0-9._~/-]*)?\Z")
_TOKEN = re.compile(r"^[\x21-\x7e]{1,4096}\Z")


def _list(value: Any) -> list[str] | None:
    """A list of strings from a list or a comma-separated string; None when neither."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    return None


def _bool(value: Any, name: str, problems: list[str]) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in BOOLEANS_TRUE:
        return True
    if text in BOOLEANS_FALSE:
        return False
    problems.append(f"{name} must be true or false; got {value!r}.")
    return False


def _pick(value: Any, name: str, allowed: tuple[str, ...], problems: list[str]) -> str:
    text = str(value).strip() if value is not None else ""
    if text not in allowed:
        problems.append(f"{name} is {value!r}; allowed: {', '.join(allowed)}.")
    return text


def _check(value: Any, name: str, pattern: re.Pattern[str], what: str, problems: list[str]) -> str:
    # the value as given: "main\n" is refused, not trimmed into something else
    text = str(value) if value is not None else ""
    if not isinstance(value, str) or not pattern.match(text):
        problems.append(f"{name} is {value!r}; allowed: {what}.")
    return text


def pull_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """See the filter pull_options' documentation."""
    if not isinstance(raw, Mapping):
        raise TypeError(f"pull_options takes a mapping of the raw values, not {type(raw).__name__}")
    problems: list[str] = []
    mode = _pick(raw.get("bootstrap", "push"), "tpu_provision_bootstrap", MODES, problems)
    result: dict[str, Any] = {"bootstrap": mode, "pull": mode == "pull"}
    if mode != "pull":
        result.update(ok=not problems, message=" ".join(problems), wait=False, timeout=0, tags=[])
        return result

    # the one exception to encryption for the repository, asked for by name, as for the API
    repo_hosts, hosts_problem = parse_http_hosts(
        raw.get("repo_http_hosts"), "tpu_provision_pull_repo_http_hosts"
    )
    if hosts_problem:
        problems.append(hosts_problem)
    repo = raw.get("repo")
    if repo in (None, ""):
        problems.append(
            "tpu_provision_pull_repo is required with tpu_provision_bootstrap=pull: the git URL of "
            f"this repository (or a project holding it) that every worker can clone; allowed: "
            f"{REPO_ALLOWED}."
        )
    elif not hosts_problem:
        problem = repo_problem(repo, repo_hosts)
        if problem:
            problems.append(problem)
    unpinned = _bool(raw.get("unpinned", False), "tpu_provision_pull_unpinned", problems)
    version = raw.get("version")
    pinned = isinstance(version, str) and bool(_COMMIT.match(version))
    if version in (None, ""):
        problems.append(
            "tpu_provision_pull_version is required with tpu_provision_bootstrap=pull: the commit "
            "every worker checks out, checks and runs as root at every boot; allowed: "
            f"{COMMIT_ALLOWED}."
        )
        version = ""
    elif pinned:
        version = version.lower()  # as git rev-parse prints it, for the script's comparison
    elif not unpinned or not isinstance(version, str) or not _VERSION.match(version):
        text = version if isinstance(version, str) else ""
        ref = bool(_VERSION.match(text))
        if re.fullmatch(r"[0-9a-fA-F]{4,39}", text) and not unpinned:
            reason = (
                "a short commit id (git takes any object that begins so, and a worker cannot "
                "check that it got the one meant)"
            )
        elif re.fullmatch(r"[0-9a-fA-F]{41,}", text) or not ref:
            reason = "not a commit id (40 or 64 hex digits), branch or tag"
        else:
            reason = "a branch or tag name, which moves: the workers would run what it points to"
        problems.append(
            f"tpu_provision_pull_version is {_shown(version)}: {reason}; allowed: {COMMIT_ALLOWED}."
        )
        version = str(version)
    tags = _list(raw.get("tags"))
    if tags is None or any(not _TAG.match(t) for t in tags):
        problems.append(
            f"tpu_provision_pull_tags is {raw.get('tags')!r}; allowed: a list or comma-separated "
            "string of tags (letters, digits, '_' and '-'), or empty for every role."
        )
        tags = []
    if LOCK_PROBLEM:
        problems.append(f"tpu_provision_bootstrap=pull cannot run: {LOCK_PROBLEM}")
    unhashed = _bool(raw.get("unhashed", False), "tpu_provision_pull_unhashed", problems)
    ansible = _check(
        raw.get("ansible") or DEFAULT_ANSIBLE, "tpu_provision_pull_ansible", _REQUIREMENT,
        f"one pip requirement such as {DEFAULT_ANSIBLE}", problems,
    )  # fmt: skip
    requirements = _list(
        list(DEFAULT_REQUIREMENTS) if raw.get("requirements") is None else raw["requirements"]
    )
    if requirements is None or any(not _REQUIREMENT.match(r) for r in requirements):
        problems.append(
            f"tpu_provision_pull_requirements is {raw.get('requirements')!r}; allowed: a list of "
            f"pip requirements such as {DEFAULT_REQUIREMENTS[0]}."
        )
        requirements = []
    installer = _pick(
        raw.get("installer", "uv"), "tpu_provision_pull_installer", INSTALLERS, problems
    )
    uv_version = _check(
        raw.get("uv_version") or DEFAULT_UV_VERSION, "tpu_provision_pull_uv_version",
        re.compile(r"^[0-9]+(\.[0-9]+){1,3}\Z"), f"a version such as {DEFAULT_UV_VERSION}",
        problems,
    )  # fmt: skip
    # Another toolchain than the lock's has no hashes to check: taken only when asked for by name.
    overrides = [
        (name, shown)
        for name, given, default, shown in (
            ("tpu_provision_pull_ansible", ansible, DEFAULT_ANSIBLE, ansible),
            ("tpu_provision_pull_requirements", requirements, list(DEFAULT_REQUIREMENTS),
             ", ".join(requirements or [])),
            ("tpu_provision_pull_uv_version", uv_version, DEFAULT_UV_VERSION, uv_version),
        )
        if given != default and (name != "tpu_provision_pull_uv_version" or installer == "uv")
    ]  # fmt: skip
    if overrides and not unhashed:
        problems.extend(
            f"{name} is {_shown(shown)}: not the version of the collection's hashed lock "
            f"({LOCK_NAME}), so the workers could not check what they download; allowed: the "
            "default (unset), your own pins in a copy of the collection with its lock "
            "regenerated (make pull-lock), or tpu_provision_pull_unhashed=true to install by "
            "name and version without hashes (trusting the package index and TLS)."
            for name, shown in overrides
        )
    auth_kind = _pick(
        raw.get("auth_kind", "machineaccount"), "tpu_provision_pull_auth_kind", AUTH_KINDS, problems
    )
    token = raw.get("access_token") or ""
    if auth_kind == "accesstoken" and (not isinstance(token, str) or not _TOKEN.match(token)):
        problems.append(
            "tpu_provision_pull_access_token must be set (printable characters, no spaces) with "
            "tpu_provision_pull_auth_kind=accesstoken; its value is not shown."
        )
    # the one exception to https, asked for by name: hosts the workers may call over plain http
    http_hosts, hosts_problem = parse_http_hosts(
        raw.get("api_http_hosts"), "tpu_provision_pull_api_http_hosts"
    )
    if hosts_problem:
        problems.append(hosts_problem)
    endpoint = raw.get("api_endpoint") or ""
    if endpoint:
        before = len(problems)
        _check(
            endpoint,
            "tpu_provision_pull_api_endpoint",
            _ENDPOINT,
            "empty (the TPU API) or an http(s) URL",
            problems,
        )
        # the workers' inventory sends its token there: the client's own rule, said up front
        problem = base_url_problem(
            endpoint,
            "tpu_provision_pull_api_endpoint",
            http_hosts=http_hosts,
            http_hosts_name="tpu_provision_pull_api_http_hosts",
        )
        if problem and len(problems) == before:
            problems.append(problem)
    extra = raw.get("vars") or {}
    if not isinstance(extra, Mapping):
        problems.append(f"tpu_provision_pull_vars must be a mapping; got {extra!r}.")
        extra = {}
    wait = _bool(raw.get("wait", True), "tpu_provision_pull_wait", problems)
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    problem = number_problem(timeout, "tpu_provision_pull_timeout", minimum=1, maximum=86400)
    if problem:
        problems.append(problem)
    metadata = raw.get("metadata") or {}
    if isinstance(metadata, Mapping) and "startup-script" in metadata:
        problems.append(
            "tpu_provision_metadata has a startup-script of its own, and pull mode writes the "
            "node's startup-script; run yours from a role, or bootstrap with push."
        )
    nodes = _list(raw.get("nodes")) or []
    login_user = str(raw.get("login_user") or "")

    variables = dict(extra)
    variables["tpu_login_user"] = login_user
    inventory = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": [str(raw.get("project") or "")],
        "zones": [str(raw.get("zone") or "")],
        "names": nodes,
        # The node may still be CREATING when its workers boot.
        "states": [],
        "hostname": "{node}-w{worker_id}",
        "use_internal_ip": True,
    }
    env = {"GCP_AUTH_KIND": auth_kind}
    if auth_kind == "accesstoken":
        env["GCP_ACCESS_TOKEN"] = str(token)
    if endpoint:
        env["CLOUDTPU_API_ENDPOINT"] = str(endpoint).strip()
    if http_hosts:
        env[HTTP_HOSTS_ENV] = ",".join(http_hosts)
    packages = [ansible, *requirements]
    hashed = not unhashed
    result.update(
        ok=not problems,
        message=" ".join(problems),
        wait=wait,
        timeout=int(float(timeout)) if not problem else DEFAULT_TIMEOUT,
        tags=tags,
        pinned=pinned,
        hashed=hashed,
        quoted={
            "repo": shlex.quote(str(repo or "")),
            "version": shlex.quote(version),
            # "1" or "": the script's tests ([ -n "$pinned" ])
            "pinned": "1" if pinned else "''",
            "hashed": "1" if hashed else "''",
            # the checkout's: a 64-digit commit id is of a sha256 repository
            "object_format": "sha256" if pinned and len(version) == 64 else "sha1",
            "tags": shlex.quote(",".join(tags)),
            "packages": " ".join(shlex.quote(p) for p in packages),
            "installer": shlex.quote(installer),
            "uv_version": shlex.quote(uv_version),
            "nodes": " ".join(shlex.quote(n) for n in nodes),
            "nodes_count": str(len(nodes)),
            "login_user": shlex.quote(login_user),
            # where the worker publishes its result (module_utils/tpu_pull.py reads it)
            "guest_attributes": shlex.quote(
                "http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes/"
                + NAMESPACE
            ),
            "result_key": shlex.quote(RESULT_KEY),
            "log_key": shlex.quote(LOG_KEY),
            "log_lines": str(LOG_LINES),
            "log_bytes": str(LOG_BYTES),
        },
        inventory=json.dumps(inventory, indent=2, sort_keys=True),
        env="".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items()),
        vars=json.dumps(variables, indent=2, sort_keys=True),
        lock=TOOLCHAIN["lock"] if hashed else "",
        uv_lock=TOOLCHAIN["uv_lock"] if hashed else "",
    )
    return result
