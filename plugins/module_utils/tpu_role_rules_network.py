# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The rules of the roles that serve or reach the network: nfs, storage and remote_shell
(``tpu_role_rules.py`` joins them with the others; the engine is ``tpu_role_checks.py``)."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import path_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    network_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_checks import (
    RoleValues,
    apt_numbers,
    flag,
    is_list,
    login_user,
    matches,
    path,
    shown,
    switch,
)

# --- nfs ---------------------------------------------------------------------------------
# The paths are written into exports, ganesha.conf and fstab: no system folder, and a mount
# point never /tmp, /home or /mnt themselves. The export and the mount point are chowned and
# shared: never the login user's home or inside it (its .ssh would be on the network).

NFS_OPTION = r"[A-Za-z0-9_.=:/-]+"
NFS_NAME = r"[a-z_][a-z0-9_.-]*"
# The words tasks/main.yml reads (tpu_nfs__mount_now, tpu_nfs__start_now).
NFS_SWITCH = ("auto", "true", "false", "yes", "no")


def _filled(value: object) -> bool:
    """What Jinja's ``value | length > 0`` says of a string or a list (and of anything else)."""
    return len(value) > 0 if isinstance(value, (str, list, tuple, dict)) else value is not None


def _external(values: RoleValues) -> bool:
    return _filled(values["tpu_nfs_external_server"])


def _not_in_home(name: str):
    return lambda values: path_problem(values[name], name, not_under=[values.login["home"]])


def _kernel_share(values: RoleValues) -> str:
    share, export = values["tpu_nfs_share_path"], values["tpu_nfs_export_path"]
    if values["tpu_nfs_backend"] != "kernel" or _external(values) or share == export:
        return ""
    return (
        f"tpu_nfs_share_path is '{share}' but tpu_nfs_export_path is '{export}': the kernel NFS"
        " server has no pseudo paths, clients mount the exported path itself. Leave"
        " tpu_nfs_share_path unset or use tpu_nfs_backend: ganesha."
    )


def _mode(values: RoleValues) -> str:
    value = values["tpu_nfs_mode"]
    if matches(value, "0?[0-7]{3}") and value[-1] in "0145":
        return ""
    return (
        f"tpu_nfs_mode is '{value}'; it must be a quoted octal mode such as \"0770\" or"
        ' "0775", and not writable by everyone.'
    )


def _owner(values: RoleValues) -> str:
    owner, group = values["tpu_nfs_owner"], values["tpu_nfs_group"]
    if matches(owner, NFS_NAME) and (not _filled(group) or matches(group, NFS_NAME)):
        return ""
    return (
        f"tpu_nfs_owner is '{owner}' and tpu_nfs_group is '{group}'; both must be user/group"
        " names (lower case letters, digits, _ . -); tpu_nfs_group may be empty (the owner's"
        " primary group)."
    )


def _cidrs(values: RoleValues) -> str:
    problem = network_problem(
        values["tpu_nfs_export_cidrs"], "tpu_nfs_export_cidrs", allow_empty=True
    )
    return problem + " The share is for the pod only." if problem else ""


def _external_server(values: RoleValues) -> str:
    value = values["tpu_nfs_external_server"]
    if not _external(values) or matches(value, "[A-Za-z0-9][A-Za-z0-9.:-]*"):
        return ""
    return (
        f"tpu_nfs_external_server is '{value}'; it must be the IP address or DNS name of one NFS"
        " server (no wildcards, no path: the path is tpu_nfs_share_path)."
    )


def _mount_options(values: RoleValues) -> str:
    value = values["tpu_nfs_mount_options"]
    if (
        is_list(value)
        and all(matches(item, NFS_OPTION) for item in value)
        and "_netdev" in value
        and "nofail" in value
        and not any(matches(str(item), "(nfs)?vers=[^4].*") for item in value)
    ):
        return ""
    return (
        f"tpu_nfs_mount_options is {value}; it must be a list of single mount options (no spaces"
        " or commas inside one), include _netdev and nofail (a worker must boot while the server"
        " is down), and ask for no NFS version other than 4."
    )


def _server(values: RoleValues) -> str:
    """The server: the host named or the coordinator of this worker's pod, a host of the
    inventory (looked at once the variables are right)."""
    server = values["tpu_nfs__server"]
    if _external(values) or (len(server) > 0 and server in values["hostvars"]):
        return ""
    return (
        f"{values['inventory_hostname']} has no NFS server: tpu_nfs_server_host is"
        f" '{values['tpu_nfs_server_host']}' (empty, or not a host of the inventory) and group"
        f" tpu_coordinator has no host with tpu_node '{values.get('tpu_node', '')}'. Set"
        " tpu_nfs_server_host to the inventory name of the serving worker, or"
        " tpu_nfs_external_server to the address of an NFS server."
    )


def _clients(values: RoleValues) -> str:
    """The server exports to its pod's own addresses (or the CIDRs named): never to everyone."""
    if not flag(values["tpu_nfs__is_server"]):
        return ""
    clients = values["tpu_nfs__clients"]
    if (
        len(clients) > 0
        and all(matches(item, "[A-Za-z0-9][A-Za-z0-9.:/_-]*") for item in clients)
        and not any(matches(item, r"(0\.0\.0\.0|::)(/.*)?") for item in clients)
        and not any(matches(item, ".*/0+") for item in clients)
    ):
        return ""
    return (
        f"The share of {values['inventory_hostname']} would be exported to {clients}: it must go to"
        " the pod's own addresses only (tpu_internal_ip of each worker; set tpu_nfs_export_cidrs"
        " to name CIDRs instead), never to *, 0.0.0.0/0 or ::/0."
    )


NFS = (
    (
        _not_in_home("tpu_nfs_export_path"),
        path("tpu_nfs_share_path"),
        _not_in_home("tpu_nfs_mount_point"),
        *apt_numbers("nfs"),
        _kernel_share,
        switch("tpu_nfs_mount", NFS_SWITCH),
        switch("tpu_nfs_server_start", NFS_SWITCH),
        _mode,
        _owner,
        _cidrs,
        _external_server,
        _mount_options,
    ),
    (_server,),
    (_clients,),
)

# --- storage -----------------------------------------------------------------------------

STORAGE_URL = r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?"


def _gcsfuse_url(name: str, what: str):
    def rule(values: RoleValues) -> str:
        value = values[name]
        if matches(value, STORAGE_URL) or (
            value == "" and not flag(values["tpu_storage__gcsfuse"])
        ):
            return ""
        return (
            f"{name} is {shown(value)}: it must be an http(s) URL of letters, digits and"
            f" . - _ ~ / : only: {what}."
        )

    return rule


STORAGE = (
    (
        login_user,
        *apt_numbers("storage"),
        _gcsfuse_url(
            "tpu_storage_gcsfuse_apt_url",
            "Google's gcsfuse apt repository, as gcsfuse's installation guide names it (needed"
            " with tpu_storage_gcs_client gcsfuse and a bucket)",
        ),
        _gcsfuse_url(
            "tpu_storage_gcsfuse_key_url",
            "the armored signing key of the gcsfuse repository, as its installation guide names"
            " it (needed with gcsfuse and a bucket)",
        ),
        # every entry: cloudtpu.pod.storage_plan's check, which the role's facts hold
        lambda values: list(values["tpu_storage__check"]["problems"]),
    ),
)

# --- remote_shell ------------------------------------------------------------------------

LOCALE = r"[A-Za-z]+(_[A-Za-z]+)?\.UTF-8(@[A-Za-z0-9]+)?"


def _locale(values: RoleValues) -> str:
    value = values["tpu_remote_shell_locale"]
    if matches(value, LOCALE):
        return ""
    return (
        f"tpu_remote_shell_locale is {shown(value)}; it must name a UTF-8 locale spelled like"
        " en_US.UTF-8, de_DE.UTF-8 or C.UTF-8 (mosh-server refuses to start without a UTF-8"
        " locale)."
    )


def _byobu(values: RoleValues) -> str:
    if flag(values["tpu_remote_shell_byobu"]):
        return ""
    if values["tpu_remote_shell_byobu_on_login"] != "enable":
        return ""
    return (
        "tpu_remote_shell_byobu_on_login is 'enable' but tpu_remote_shell_byobu is false: byobu"
        " cannot start on login without being installed. Set tpu_remote_shell_byobu: true or"
        " tpu_remote_shell_byobu_on_login: leave."
    )


REMOTE_SHELL = ((login_user, _locale, *apt_numbers("remote_shell"), _byobu),)

NETWORK_RULES = {"nfs": NFS, "storage": STORAGE, "remote_shell": REMOTE_SHELL}
# The role's own facts (vars/main.yml) a rule reads, besides its options and the login contract.
NETWORK_INTERNAL = {
    "nfs": ("tpu_nfs__server", "tpu_nfs__is_server", "tpu_nfs__clients"),
    "storage": ("tpu_storage__gcsfuse", "tpu_storage__check"),
}
