# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The rules of the apt step and the base role (``tpu_role_rules.py`` joins them with the
others; the engine is ``tpu_role_checks.py``), and base's checks on the host after its probe
(the table ``base:host``)."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import number_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_checks import (
    RoleValues,
    apt_numbers,
    has_dot_parts,
    login_user,
    matches,
    names_list,
    number,
    one_of,
    shown,
)

# --- apt (the shared step; its bounds are those of the roles that import it) -------------


def _apt_step(values: RoleValues) -> list:
    """The numbers of the apt step, named as the importing role names them (tpu_base_apt_retries)
    or as the step does (tpu_apt_retries) when a play uses it directly."""
    caller = values["tpu_apt_caller"]
    prefix = "tpu_apt_" if caller == "apt" else f"tpu_{caller}_apt_"
    limits = (("lock_timeout", 0, 3600), ("cache_valid_time", 0, 31536000), ("retries", 0, 100))
    return [
        number_problem(values[f"tpu_apt_{key}"], prefix + key, minimum=low, maximum=high)
        for key, low, high in limits
    ]


APT = (
    (
        _apt_step,
        number("tpu_apt_attempt_timeout", 30, 86400),
        number("tpu_apt_pod_cache_port", 1024, 65535),
    ),
)

# --- base --------------------------------------------------------------------------------

PACKAGE = r"[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?(=[A-Za-z0-9.+~:-]+)?"
PACKAGES = "a list of Debian package names (optionally name=version)"


def _timezone(values: RoleValues) -> str:
    value = values["tpu_base_timezone"]
    if isinstance(value, str) and (
        value == "" or matches(value, r"[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")
    ):
        return ""
    return (
        "tpu_base_timezone must be empty or a time zone name such as Etc/UTC or Europe/Berlin;"
        f" got {shown(value)}."
    )


def _user_shell(values: RoleValues) -> str:
    value = values["tpu_base_user_shell"]
    if isinstance(value, str) and (
        value == "" or (matches(value, r"(/[A-Za-z0-9_.+-]+)+") and not has_dot_parts(value))
    ):
        return ""
    return (
        "tpu_base_user_shell must be empty or the absolute path of a shell such as /usr/bin/zsh;"
        f" got {shown(value)}."
    )


def _nofile(values: RoleValues) -> str:
    value = values["tpu_base_nofile"]
    problem = number_problem(value, "tpu_base_nofile", minimum=1024, maximum=1048576)
    if not problem or str(value).strip() == "0":
        return ""
    return problem + " (or 0 to leave the limits)"


BASE = (
    (
        login_user,
        *apt_numbers("base", lock=True),
        one_of("tpu_base_unattended_upgrades", ("no_reboot", "disable", "keep")),
        names_list("tpu_base_packages", PACKAGE, PACKAGES),
        names_list("tpu_base_packages_extra", PACKAGE, PACKAGES),
        _timezone,
        _user_shell,
        _nofile,
    ),
)


def _as_int(value: object) -> int:
    """What Jinja's ``int`` filter makes of a value (0 when it is not a whole number)."""
    try:
        return int(str(value).strip())
    except ValueError:
        return 0


def _base_host(values: RoleValues) -> list:
    """What the host can take (tasks/configure.yml, after its probe, tpu_base__found): the time
    zone, the login user, the login shell and the open files limit. In check mode the time zone
    data and the shell's package may not be installed yet."""
    found = values["tpu_base__found"]
    check_mode = bool(values.get("ansible_check_mode", False))
    zone, shell = values["tpu_base_timezone"], values["tpu_base_user_shell"]
    nofile = _as_int(values["tpu_base_nofile"])
    problems = []
    if zone and not found["zone"] and not check_mode:
        problems.append(
            f"tpu_base_timezone {shown(zone)} is not a time zone of this host (no"
            f" /usr/share/zoneinfo/{zone}); see `timedatectl list-timezones`."
        )
    if (shell or nofile > 0) and not found["user"]:
        problems.append(
            f"The login user {shown(values.login['user'])} does not exist on this host, so its"
            " login shell or open files limit cannot be set; set tpu_login_user (or ansible_user)"
            " to the SSH user."
        )
    if shell and shell not in found["shells"] and not check_mode:
        problems.append(
            f"tpu_base_user_shell {shown(shell)} is not listed in /etc/shells; install its package"
            " with tpu_base_packages_extra (for example zsh) or pick one of"
            f" {', '.join(found['shells'])}."
        )
    if nofile > 0 and found["nofile"] != "":
        problems.append(
            f"tpu_base_nofile {values['tpu_base_nofile']} is above what this host allows (a process"
            f" cannot raise its hard limit that far: {found['nofile']}); pam_limits would then"
            " refuse every login. Pick a lower value."
        )
    return problems


BASE_HOST = ((_base_host,),)


BASE_RULES = {
    "apt": APT,
    "base": BASE,
    # checked on the host, after its probe: a table named <role>:<what>
    "base:host": BASE_HOST,
}
# The role's own facts a rule reads, besides its options and the login contract.
BASE_INTERNAL = {"base:host": ("tpu_base__found",)}
