# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The rules of the roles that install the worker's software: python, framework, tcmalloc and
libtpu (the engine and the shared rules are ``tpu_role_checks.py``; apt and base are
``tpu_role_rules_base.py``, nfs, storage and remote_shell ``tpu_role_rules_network.py``).
``RULES`` joins them all.

Each role's table is a tuple of stages, each a tuple of rules (see ``tpu_role_checks``). The
variables a rule reads are the role's options (its meta/argument_specs.yml, the contract), the
login contract, and a few of the role's own facts named in ``INTERNAL``.
"""

from __future__ import annotations

import os

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    device_glob_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_checks import (
    RoleValues,
    apt_numbers,
    boolean,
    ca_bundle,
    has_dot_parts,
    is_list,
    matches,
    names_list,
    number,
    one_of,
    path,
    run_stages,
    shown,
    shown_data,
    switch,
    type_name,
    venv,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_rules_base import (
    BASE_INTERNAL,
    BASE_RULES,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_rules_network import (
    NETWORK_INTERNAL,
    NETWORK_RULES,
)

# --- python ------------------------------------------------------------------------------

INDEX_URL = r"(https?|file)://\S+"
TOOL_FOLDERS = ["/opt", "/usr/local"]
CACHE_FOLDERS = ["/var/cache/cloudtpu"]


def _uv(values: RoleValues) -> bool:
    return values["tpu_python_installer"] == "uv"


def _python_version(values: RoleValues) -> str:
    value = values["tpu_python_version"]
    if matches(value, r"3\.[0-9]{1,2}"):
        return ""
    return (
        f"tpu_python_version is {shown(value)} ({type_name(value)}); it must be a quoted"
        " major.minor version such as '3.10' or '3.11' (an unquoted 3.10 in YAML is the number"
        " 3.1)."
    )


def _login_file(values: RoleValues) -> str:
    value = values["tpu_python_venv_login_file"]
    if matches(value, r"[^/\s][^\s]*") and ".." not in str(value).split("/"):
        return ""
    return (
        f"tpu_python_venv_login_file is {shown(value)}; it must be a path relative to the owner's"
        " home, such as .bashrc or .profile."
    )


def _uv_tool(values: RoleValues) -> list:
    if not _uv(values):
        return []
    found = []
    version = values["tpu_python_uv_version"]
    if not matches(version, r"[0-9]+\.[0-9]+\.[0-9]+"):
        found.append(
            f"tpu_python_uv_version is {shown(version)}; it must be an exact version such as"
            " 0.13.8 (uv is pinned so that every worker runs the same installer)."
        )
    found.append(path_problem(values["tpu_python_uv_dir"], "tpu_python_uv_dir", under=TOOL_FOLDERS))
    link = values["tpu_python_uv_link"]
    if link != "":
        found.append(path_problem(link, "tpu_python_uv_link", under=TOOL_FOLDERS, basename="uv"))
    return found


def _python_index(values: RoleValues) -> str:
    value = values["tpu_python_index_url"]
    if value == "" or matches(value, INDEX_URL):
        return ""
    return (
        "tpu_python_index_url is not an http(s):// or file:// URL (the value is not shown: it may"
        " hold a password); allowed: empty or such a URL."
    )


PYTHON = (
    (
        _python_version,
        _login_file,
        venv,
        _uv_tool,
        *apt_numbers("python", lock=True),
        ca_bundle("tpu_python_ca_bundle"),
        _python_index,
        *boolean("tpu_python_pod_cache"),
        path("tpu_python_pod_cache_dir", under=CACHE_FOLDERS),
        number("tpu_python_pod_cache_port", 1024, 65535),
    ),
)

# --- framework ---------------------------------------------------------------------------

RELEASE = r"[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?(\.post[0-9]+)?(\+[a-z0-9.]+)?"
TORCH_RELEASE = r"[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?(\+[a-z0-9.]+)?"
REQUIREMENT = r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*([=<>!~].*|@ .+|;.*)?"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def _framework_version(values: RoleValues) -> str:
    value = values["tpu_framework_version"]
    if value == "latest" or matches(value, RELEASE):
        return ""
    return (
        f"tpu_framework_version is {shown(value)} ({type_name(value)}); it must be 'latest' or an"
        " exact, quoted release such as '0.10.2' (jax) or '2.9.0' (torch_xla)."
    )


def _torch_version(values: RoleValues) -> str:
    value = values["tpu_framework_torch_version"]
    if value == "" or matches(value, TORCH_RELEASE):
        return ""
    return (
        f"tpu_framework_torch_version is {shown(value)}; it must be empty (the torch release"
        " series torch_xla is built for) or an exact, quoted release such as '2.9.0'."
    )


def _extra_requirements(values: RoleValues) -> str:
    value = values["tpu_framework_extra_requirements"]
    if is_list(value) and all(matches(item, REQUIREMENT) for item in value):
        return ""
    return (
        f"tpu_framework_extra_requirements is {shown_data(value)}; each entry must be one"
        " requirement specifier such as 'flax==0.12.0' or 'optax' (no installer options: use"
        " tpu_framework_index_url, tpu_framework_extra_index_urls, tpu_framework_find_links)."
    )


def _requirements_file(values: RoleValues) -> str:
    value = values["tpu_framework_requirements_file"]
    if value == "" or (isinstance(value, str) and os.path.isfile(value)):
        return ""
    return (
        f"tpu_framework_requirements_file is {shown(value)}; it must be empty or name a readable"
        " file on the control machine."
    )


def _uv_bin(values: RoleValues) -> str:
    if values["tpu_framework_installer"] != "uv":
        return ""
    problem = path_problem(values["tpu_framework_uv_bin"], "tpu_framework_uv_bin")
    return (
        problem + " (cloudtpu.pod.python puts uv in <tpu_python_uv_dir>/bin/uv)" if problem else ""
    )


def _urls(value: object, pattern: str) -> bool:
    return is_list(value) and all(matches(str(item), pattern) for item in value)


def _framework_index(values: RoleValues) -> str:
    """The index URLs can carry a token: the message never shows them."""
    index = values["tpu_framework_index_url"]
    if (
        (index == "" or matches(index, INDEX_URL))
        and _urls(values["tpu_framework_extra_index_urls"], INDEX_URL)
        and _urls(values["tpu_framework_find_links"], r"((https?|file)://|/)\S+")
    ):
        return ""
    return (
        "tpu_framework_index_url must be empty or an http(s):// or file:// URL, every entry of"
        " tpu_framework_extra_index_urls such a URL and every entry of tpu_framework_find_links"
        " such a URL or an absolute folder on the worker (the values are not shown: they may"
        " hold a password)."
    )


def _framework_env(values: RoleValues) -> str:
    """The values can be tokens: the message shows the keys only."""
    value = values["tpu_framework_env"]
    if isinstance(value, dict) and all(
        matches(str(key), ENV_NAME)
        and isinstance(item, (str, int, float))
        and not isinstance(item, bool)
        for key, item in value.items()
    ):
        return ""
    keys = list(value) if isinstance(value, dict) else []
    return (
        f"tpu_framework_env has the keys {shown_data(keys)} (values not shown); allowed: a mapping"
        " whose keys are environment variable names (letters, digits, '_', not starting with a"
        " digit) and whose values are plain strings or numbers."
    )


def _device_globs(values: RoleValues) -> list:
    value = values["tpu_framework_device_globs"]
    if not is_list(value) or not value:
        return [
            f"tpu_framework_device_globs is {shown_data(value)}; allowed: a non-empty list of TPU"
            " device patterns such as /dev/accel* or /dev/vfio/[0-9]*."
        ]
    return [device_glob_problem(item, "tpu_framework_device_globs") for item in value]


FRAMEWORK = (
    (
        _framework_version,
        _torch_version,
        _extra_requirements,
        _requirements_file,
        _uv_bin,
        _framework_index,
        ca_bundle("tpu_framework_ca_bundle"),
        *boolean("tpu_framework_pod_cache", "tpu_framework_tpu_info"),
        # emptied and removed on every host: only a folder of the role's own
        path("tpu_framework_pod_cache_dir", under=CACHE_FOLDERS),
        venv,
        number("tpu_framework_pod_cache_port", 1024, 65535),
        _framework_env,
        switch("tpu_framework_require_tpu"),
        number("tpu_framework_check_timeout", 1, 86400),
        _device_globs,
    ),
)

# --- tcmalloc ----------------------------------------------------------------------------

TCMALLOC_LIBRARY = r"/[^\s]+/lib[^/\s]*tcmalloc[^/\s]*\.so(\.[0-9]+)*"


def _library(values: RoleValues) -> str:
    value = values["tpu_tcmalloc_library"]
    if matches(value, TCMALLOC_LIBRARY) and not has_dot_parts(value) and "//" not in value:
        return ""
    return (
        f"tpu_tcmalloc_library is {shown(value)}; allowed: the absolute, normalised path (no '.',"
        " '..', '//' or spaces) of a TCMalloc shared library such as"
        " /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4."
    )


TCMALLOC = (
    (one_of("tpu_tcmalloc_mode", ("disable", "framework", "keep", "restore")), _library, venv),
)

# --- libtpu ------------------------------------------------------------------------------


def _lock_files(values: RoleValues) -> str:
    """tpu-unlock only removes regular files named libtpu*lockfile directly in /tmp."""
    value = values["tpu_libtpu_lock_files"]
    if is_list(value) and value:
        found = [
            path_problem(
                item,
                "tpu_libtpu_lock_files",
                parent=["/tmp"],
                basename="libtpu[A-Za-z0-9._-]*lockfile",
            )
            for item in value
        ]
        return " ".join(problem for problem in found if problem)
    return (
        "tpu_libtpu_lock_files must be a non-empty list of lock files directly in /tmp such as"
        f' ["/tmp/libtpu_lockfile"]; got {shown_data(value)}.'
    )


LIBTPU = (
    (
        lambda values: device_glob_problem(
            values["tpu_libtpu_device_glob"], "tpu_libtpu_device_glob"
        ),
        _lock_files,
        path("tpu_libtpu_log_dir", parent=["/tmp"], basename="tpu_logs[A-Za-z0-9._-]*"),
        *boolean("tpu_libtpu_remove_logs", "tpu_libtpu_run", "tpu_libtpu_kill"),
        names_list(
            "tpu_libtpu_kill_users",
            r"([a-z_][a-z0-9_-]{0,31}|[0-9]+)",
            "a list of account names (lower case letters, digits, '_' and '-', starting with a"
            " letter or '_', at most 32 characters) or numeric uids, for example [tpu]",
        ),
        number("tpu_libtpu_kill_grace", 0, 3600),
    ),
)

RULES = {
    **BASE_RULES,
    "python": PYTHON,
    "framework": FRAMEWORK,
    "tcmalloc": TCMALLOC,
    "libtpu": LIBTPU,
    **NETWORK_RULES,
}
# The role's own facts a rule reads, besides its options and the login contract.
INTERNAL = {**BASE_INTERNAL, **NETWORK_INTERNAL}


def role_problems(role: str, values: RoleValues) -> list[str]:
    """The problems of ``role``'s variables (empty when every rule passes)."""
    if role not in RULES:
        raise KeyError(
            f"no preflight rules for the role {role!r}; roles with rules: {sorted(RULES)}"
        )
    return run_stages(RULES[role], values)
