# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the nfs role does on a worker and how it reports it: whether it starts the server and
mounts the share now, and the two sentences of its facts tpu_nfs_server_status and
tpu_nfs_mount_status (the cloudtpu.pod.nfs_status filter, roles/nfs/vars/main.yml); and whether
tpu_nfs_owner has the same uid across the pod (the cloudtpu.pod.nfs_uid_problem filter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

YES = ("true", "yes")
NO = ("false", "no")


def nfs_status(
    plan: Mapping[str, Any],
    kernel: Mapping[str, Any],
    mount: Any,
    server_start: Any,
    backend: str,
    export_path: str,
    share_path: str,
    mount_point: str,
    external_server: str = "",
) -> dict[str, Any]:
    """``plan`` is the role's view of the pod (``server``, ``is_server``, ``server_address``,
    ``clients``); ``kernel`` what the worker's kernel can (``client``, ``server``); ``mount``
    and ``server_start`` the switches (auto, true or false). Returns ``mount_now``,
    ``start_now``, ``service``, ``server_status`` and ``mount_status``."""
    switch_mount, switch_start = str(mount).lower(), str(server_start).lower()
    is_server = boolean(plan["is_server"], strict=False)
    address = plan["server_address"]
    service = "nfs-server" if backend == "kernel" else "nfs-ganesha"
    mount_now = switch_mount in YES or (
        switch_mount == "auto" and boolean(kernel["client"], strict=False)
    )
    start_now = switch_start in YES or (
        switch_start == "auto" and (backend == "ganesha" or boolean(kernel["server"], strict=False))
    )
    if not is_server:
        server_by = "the external server" if external_server else plan["server"]
        server_status = f"not the server: {server_by} ({address}) serves {share_path}."
    elif start_now:
        server_status = (
            f"{service} serves {export_path} as {share_path} to {', '.join(plan['clients'])}."
        )
    elif switch_start in NO:
        server_status = f"{service} not started: tpu_nfs_server_start is false."
    else:
        server_status = (
            f"{service} not started: this kernel has no NFS server (no nfsd in /proc/filesystems"
            " and no nfsd module to load), so nfs-kernel-server cannot run here. The exports are"
            " written; use tpu_nfs_backend: ganesha for a user-space server, or"
            " tpu_nfs_server_start: true to try anyway."
        )
    share = f"{export_path} (bind mount on the server)" if is_server else f"{address}:{share_path}"
    if is_server and mount_point == export_path:
        mount_status = "not needed: the server's shared folder is the mount point itself."
    elif switch_mount in NO:
        mount_status = (
            f"skipped: tpu_nfs_mount is false; {share} is in /etc/fstab for {mount_point}."
        )
    elif is_server or mount_now:
        mount_status = f"mounted: {share} on {mount_point}."
    else:
        mount_status = (
            "skipped: this kernel cannot mount NFS (no nfs4 in /proc/filesystems and no NFS"
            f" module to load), so {share} is not mounted on {mount_point} now. It is in"
            " /etc/fstab and mounts at boot on a kernel with NFS; tpu_nfs_mount: true forces the"
            " attempt."
        )
    return {
        "mount_now": mount_now,
        "start_now": start_now,
        "service": service,
        "server_status": server_status,
        "mount_status": mount_status,
    }


def owner_uid_problem(
    owner: str,
    uid: Any,
    host: str,
    server: str,
    server_uid: Any = None,
    others: Sequence[str] = (),
) -> str:
    """Why the share would not be writable for ``owner`` (uid ``uid`` on ``host``), else ''.
    NFS matches users by uid. A client compares with ``server_uid``, its server's (None when the
    server is not in the play); the server names ``others``, the workers whose records of the
    last complete run hold another uid."""
    if host != server and server_uid is not None and str(uid) != str(server_uid):
        where = f" on {host} but {server_uid} on the server {server}"
    elif host == server and others:
        where = (
            f" on the server {host} but another one on {', '.join(others)}"
            " (their records of the last complete run)"
        )
    else:
        return ""
    return (
        f"tpu_nfs_owner '{owner}' has uid {uid}{where}. NFS matches users by uid, so the share "
        "would not be writable there. Give the user the same uid on every worker, or set "
        "tpu_nfs_squash: all_squash."
    )
