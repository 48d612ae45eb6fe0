# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The framework role's install, worked out: the installer's options and environment, the
requirement specifiers, the command lines, and what the installer's dry run said.

The cloudtpu.pod.framework_install filters call these (roles/framework/tasks/install.yml). The
index URLs can carry a token: nothing here logs, and the tasks that show the results are
no_log when one is set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_login import login_user_problem

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# The first line of `uv pip compile` (jax==0.6.2) or of `pip index versions` (jax (0.6.2)).
NEWEST = re.compile(r"^(jax|torch[-_]xla)\s*(==|\()\s*([^\s)]+)", re.MULTILINE | re.IGNORECASE)


def installer(
    name: str,
    venv: str,
    dist: str,
    uv_bin: str,
    index_url: str = "",
    extra_index_urls: Iterable[Any] = (),
    find_links: Iterable[Any] = (),
    ca_bundle: str = "",
) -> dict[str, Any]:
    """The installer's options: ``name`` is ``uv`` or ``pip``.

    Returns ``name``, ``python`` (the venv's), ``index`` and ``env`` (the installer's),
    ``pip_index`` and ``pip_env`` (pip's, for the pod's wheel download), ``head`` (the install
    command without its arguments) and ``newest`` (the command that asks the index for the
    newest release; the distribution's name goes to its standard input with uv).
    """
    python = f"{venv}/bin/python"
    bundle = ca_bundle or SYSTEM_BUNDLE
    extra = [str(url) for url in extra_index_urls]
    links = [f"--find-links={link}" for link in find_links]
    uv_index = (["--default-index", index_url] if index_url else []) + [
        f"--index={url}" for url in extra
    ]
    pip_index = (["--index-url", index_url] if index_url else []) + [
        f"--extra-index-url={url}" for url in extra
    ]
    uv_index, pip_index = uv_index + links, pip_index + links
    pip_env = {"PIP_CERT": bundle, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    if name == "uv":
        return {
            "name": name,
            "python": python,
            "index": uv_index,
            "env": {"UV_SYSTEM_CERTS": "1", "UV_NO_PROGRESS": "1", "SSL_CERT_FILE": bundle},
            "pip_index": pip_index,
            "pip_env": pip_env,
            "head": [uv_bin, "pip", "install", "--python", python],
            "newest": [
                uv_bin,
                *("pip", "compile", "--python", python, "--no-deps", "--no-header"),
                *("--no-annotate", "--quiet", *uv_index, "-"),
            ],
        }
    return {
        "name": name,
        "python": python,
        "index": pip_index,
        "env": pip_env,
        "pip_index": pip_index,
        "pip_env": pip_env,
        "head": [python, "-m", "pip", "install"],
        "newest": [python, "-m", "pip", "index", "versions", *pip_index, dist],
    }


def specs(
    how: Mapping[str, Any],
    framework: str,
    version: str,
    torch_version: str = "",
    tpu_info: Any = True,
    extra: Iterable[str] = (),
    requirements_file: str = "",
    venv: str = "",
    newest: str = "",
) -> dict[str, Any]:
    """The requirement specifiers and the install command lines.

    ``how`` is what :func:`installer` returned; ``newest`` is what the index said with
    ``version`` ``latest`` (else ignored). Returns ``pin`` (the release, ``''`` when the index
    named none), ``tools`` (unpinned tools that come with the framework), ``specs``, ``reqs``
    (what a download is given: the specifiers and ``-r FILE``), ``install`` (the whole command)
    and ``dry_run`` (the installer's dry run of it), and ``pin_only`` (the framework's pinned
    release and its tools are all there is to install: no extra requirements, no requirements
    file, not ``latest``).
    """
    if version == "latest":
        found = NEWEST.search(newest or "")
        pin = found.group(3) if found else ""
    else:
        pin = str(version)
    torch = (
        f"torch=={torch_version}"
        if torch_version
        else "torch~=" + ".".join(pin.split(".")[:2]) + ".0"
    )
    main = {
        "jax": [f"jax[tpu]=={pin}"],
        "torch_xla": [torch, f"torch_xla[tpu]=={pin}"],
        "none": [],
    }[framework]
    tools = ["tpu-info"] if boolean(tpu_info, strict=False) else []
    wanted = [*main, *tools, *extra]
    files = ["-r", f"{venv}/cloudtpu-requirements.txt"] if requirements_file else []
    head = list(how["head"])
    install = [*head, *how["index"], *wanted, *files]
    uv = how["name"] == "uv"
    cut = 3 if uv else 4
    dry = ["--dry-run"] if uv else ["--dry-run", "--quiet", "--report", "-"]
    return {
        "pin": pin,
        "tools": tools,
        "specs": wanted,
        "reqs": [*wanted, *files],
        "install": install,
        "dry_run": [*install[:cut], *dry, *install[cut:]],
        "pin_only": (
            framework != "none"
            and version != "latest"
            and not requirements_file
            and len(wanted) == 1 + len(tools)
        ),
    }


def at_pin(present: Mapping[str, Any], pin_only: bool, pin: str) -> bool:
    """Whether the venv holds the pinned release and every tool already, so that there is
    nothing to ask the index (with ``pin_only``, see :func:`specs`).

    ``present`` is the registered result of files/framework_present.py: the framework's
    version on its first line (rc 1 without it), then a line naming the tools missing.
    """
    if not pin_only or present.get("skipped") or present.get("rc") != 0:
        return False
    lines = present.get("stdout_lines", [])
    return not any(lines[1:]) and (lines[0] if lines else "").strip() == pin


def host_problem(found: Mapping[str, Any], login: Mapping[str, Any], host: str, uv_bin: str) -> str:
    """Why the role cannot install into the venv on ``host``, or ``''``.

    ``found`` is the role's look at the host: ``passwd`` (the login user's passwd entry, None
    without one), ``python`` and ``uv`` (whether the venv's python and ``uv_bin`` exist);
    ``login`` the login contract, whose user owns the venv at ``login['venv']``.
    """
    if found["passwd"] is None:
        return login_user_problem(login, host, None, home=False)
    if found["python"] and found["uv"]:
        return ""
    missing = (
        f"The venv {login['venv']} has no bin/python"
        if not found["python"]
        else f"tpu_framework_uv_bin {uv_bin} does not exist"
    )
    return (
        f"{missing}: run cloudtpu.pod.python first (it makes the venv and installs uv), or point"
        " tpu_venv_path / tpu_framework_uv_bin at what exists."
    )


def plan(result: Mapping[str, Any], name: str, missing: bool = False, dist: str = "") -> dict:
    """What the installer's dry run (a registered command result) says: ``todo`` (something
    to install or uninstall) and ``changes`` (one line for the log)."""
    if missing:
        return {"todo": True, "changes": f"{dist} is not in the venv yet, everything is installed"}
    if not result or result.get("skipped") or "stdout" not in result:
        return {"todo": False, "changes": ""}
    if name == "uv":
        text = f"{result.get('stderr', '')}{result.get('stdout', '')}"
        lines = [*result.get("stderr_lines", []), *result.get("stdout_lines", [])]
        return {
            "todo": re.search("Would (install|uninstall)", text) is not None,
            "changes": ", ".join(line.strip() for line in lines if re.match(r" *[-+] ", line)),
        }
    report = json.loads(result["stdout"])
    installs = report.get("install") or []
    return {
        "todo": len(installs) > 0,
        "changes": ", ".join(
            f"{item['metadata']['name']}=={item['metadata']['version']}" for item in installs
        ),
    }
