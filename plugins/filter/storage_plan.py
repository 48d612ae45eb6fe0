# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The storage role's mounts: its inputs checked, and the fstab entries they give."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import BOOLEANS, boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    number_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import bucket_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import host_problem

DOCUMENTATION = r"""
name: storage_plan
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The storage role's bucket and NFS mounts, checked, as fstab entries
description:
  - Checks C(tpu_storage_buckets) and C(tpu_storage_nfs) (each entry's fields, its mount point
    against the shared path check, bucket names against Cloud Storage's naming rules, NFS servers
    as one address or DNS name, mount points used once) and the client options.
  - Returns C(problems) (one sentence each, empty when all is well), C(buckets) and C(nfs), one
    item per entry with C(path), C(src), C(fstype), C(opts) (the fstab options) and C(state)
    (C(mounted) or C(absent)), ready for C(ansible.posix.mount).
positional: nfs, client, endpoint, anonymous, home, uid, gid
options:
  _input:
    description: tpu_storage_buckets.
    type: raw
    required: true
  nfs:
    description: tpu_storage_nfs.
    type: raw
    required: true
  client:
    description: tpu_storage_gcs_client, C(gcsfuse) or C(rclone).
    type: str
    required: true
  endpoint:
    description: tpu_storage_gcs_endpoint (rclone only); empty for Google's own.
    type: str
    default: ""
  anonymous:
    description: tpu_storage_gcs_anonymous (rclone only).
    type: raw
    default: false
  home:
    description: The login user's home, which is never a mount point itself.
    type: str
    default: ""
  uid:
    description: Numeric owner of the files of a bucket mount (the login user); empty in checks.
    type: str
    default: ""
  gid:
    description: Numeric group of the files of a bucket mount.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Mount the buckets
  ansible.posix.mount:
    path: "{{ item.path }}"
    src: "{{ item.src }}"
    fstype: "{{ item.fstype }}"
    opts: "{{ item.opts }}"
    state: "{{ item.state }}"
  loop: "{{ tpu_storage__plan['buckets'] }}"
  vars:
    tpu_storage__plan: >-
      {{ tpu_storage_buckets | cloudtpu.pod.storage_plan(tpu_storage_nfs, 'gcsfuse',
                                                         uid='1000', gid='1000') }}
"""

RETURN = r"""
_value:
  description: C(problems), C(buckets) and C(nfs) as described above.
  type: dict
"""

BUCKET_KEYS = {
    "bucket", "path", "state", "read_only", "implicit_dirs", "allow_other",
    "file_cache_max_size_mb", "cache_dir", "options",
}  # fmt: skip
NFS_KEYS = {"server", "export", "path", "state", "options"}
CLIENTS = ("gcsfuse", "rclone")
STATES = ("present", "absent")
# One mount option: no comma, space or '#' (they would split or end the fstab field).
_OPTION = re.compile(r"[A-Za-z0-9_.:/=@+-]+")
_EXPORT = re.compile(r"/(?:[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)?")
_ENDPOINT = re.compile(r"https?://[A-Za-z0-9.:\[\]-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~/-]*)?")
NFS_REQUIRED = ("_netdev", "nofail")
# Memory, a common gcsfuse cache on TPU VMs (large RAM); a system folder for the path check.
SHM = posixpath.join("/dev", "shm")
NFS_DEFAULT_OPTIONS = ["_netdev", "nofail", "hard", "timeo=600", "retrans=3"]


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)) and str(value).lower() in {str(b) for b in BOOLEANS}:
        return boolean(value, strict=False)
    return None


def _options_problem(value: Any, name: str) -> str:
    if not isinstance(value, list) or not all(
        isinstance(o, str) and _OPTION.fullmatch(o) for o in value
    ):
        return (
            f"{name} is {_shown(value)}: it must be a list of single mount options (no commas,"
            " spaces or '#' inside one), such as [noatime] or [max_conns=8]."
        )
    return ""


def _entry_problems(entry: Any, name: str, keys: set[str], required: tuple[str, ...]) -> list:
    if not isinstance(entry, Mapping):
        return [f"{name} is {_shown(entry)}: it must be a mapping with {', '.join(required)}."]
    unknown = sorted(set(entry) - keys)
    missing = [key for key in required if key not in entry]
    found = []
    if unknown:
        found.append(f"{name} has unknown keys {unknown}; allowed: {sorted(keys)}.")
    if missing:
        found.append(f"{name} lacks {', '.join(missing)}; it must have {', '.join(required)}.")
    if entry.get("state", "present") not in STATES:
        found.append(f"{name}.state is {_shown(entry.get('state'))}; allowed: present or absent.")
    return found


def _cache_dir_problem(value: Any, name: str) -> str:
    """The shared path check, with folders in /dev/shm allowed (memory, a common gcsfuse cache)."""
    if isinstance(value, str) and value.startswith(SHM + "/"):
        if not path_problem("/srv" + value[len(SHM) :], name):
            return ""
    return path_problem(value, name)


def _bucket_problems(entry: Mapping, name: str, client: str) -> list[str]:
    found = [bucket_problem(entry["bucket"], f"{name}.bucket")]
    for key in ("read_only", "implicit_dirs", "allow_other"):
        if key in entry and _bool(entry[key]) is None:
            found.append(f"{name}.{key} is {_shown(entry[key])}; allowed: true or false.")
    size = entry.get("file_cache_max_size_mb", 0)
    found.append(number_problem(size, f"{name}.file_cache_max_size_mb", minimum=-1, maximum=10**8))
    if entry.get("cache_dir", ""):
        found.append(_cache_dir_problem(entry["cache_dir"], f"{name}.cache_dir"))
    elif size not in (0, "0") and client == "gcsfuse":
        found.append(
            f"{name}.file_cache_max_size_mb is {_shown(size)} but {name}.cache_dir is empty:"
            " gcsfuse keeps its file cache only in a cache_dir (a local SSD or /dev/shm folder)."
        )
    found.append(_options_problem(entry.get("options", []), f"{name}.options"))
    return found


def _nfs_problems(entry: Mapping, name: str) -> list[str]:
    found = [host_problem(entry["server"], f"{name}.server")]
    export = entry["export"]
    if not isinstance(export, str) or not _EXPORT.fullmatch(export):
        found.append(
            f"{name}.export is {_shown(export)}: it must be the server's absolute share path,"
            " such as /vol1 (a Filestore share is /<share name>)."
        )
    options = entry.get("options", NFS_DEFAULT_OPTIONS)
    problem = _options_problem(options, f"{name}.options")
    if not problem and not all(o in options for o in NFS_REQUIRED):
        problem = (
            f"{name}.options is {_shown(options)}: it must hold _netdev and nofail (a worker"
            " must boot while the server is down)."
        )
    return [*found, problem]


def _bucket_mount(entry: Mapping, client: str, endpoint: str, anonymous: bool, ids: list) -> dict:
    read_only = _bool(entry.get("read_only", False))
    opts = ["ro" if read_only else "rw", "_netdev", "nofail"]
    size = int(entry.get("file_cache_max_size_mb", 0))
    cache_dir = entry.get("cache_dir", "")
    if client == "gcsfuse":
        src, fstype = entry["bucket"], "gcsfuse"
        if _bool(entry.get("implicit_dirs", True)):
            opts.append("implicit_dirs")
        opts += [*ids, "file_mode=640", "dir_mode=750"]
        if size:
            opts += [f"file_cache_max_size_mb={size}", f"cache_dir={cache_dir}"]
    else:
        src, fstype = f":gcs:{entry['bucket']}", "rclone"
        opts += ["args2env", "config=/dev/null"]
        opts += [f"gcs_endpoint={endpoint}"] if endpoint else []
        opts.append("gcs_anonymous=true" if anonymous else "gcs_env_auth=true")
        # minimal: a file opened only for writing goes to the bucket as it is written and is
        # there when close() returns, as with gcsfuse (a rename is then a copy in the bucket);
        # only a file opened for reading and writing is staged in the cache. With "writes" a file
        # is uploaded seconds after its last close: a checkpoint replaced every second never is.
        opts += [*ids, "umask=027", "vfs_cache_mode=minimal"]
        if size > 0:
            opts.append(f"vfs_cache_max_size={size}M")
        if cache_dir:
            opts.append(f"cache_dir={cache_dir}")
    if _bool(entry.get("allow_other", True)):
        opts += ["allow_other", "default_permissions"]
    opts += list(entry.get("options", []))
    state = "absent" if entry.get("state", "present") == "absent" else "mounted"
    return {
        "bucket": entry["bucket"], "path": entry["path"], "src": src, "fstype": fstype,
        "opts": ",".join(opts), "state": state, "cache_dir": cache_dir,
    }  # fmt: skip


def _nfs_mount(entry: Mapping) -> dict:
    host = entry["server"]
    host = f"[{host}]" if ":" in host else host
    state = "absent" if entry.get("state", "present") == "absent" else "mounted"
    return {
        "path": entry["path"], "src": f"{host}:{entry['export']}", "fstype": "nfs",
        "opts": ",".join(entry.get("options", NFS_DEFAULT_OPTIONS)), "state": state,
    }  # fmt: skip


def storage_plan(
    buckets: Any,
    nfs: Any,
    client: str,
    endpoint: str = "",
    anonymous: Any = False,
    home: str = "",
    uid: str = "",
    gid: str = "",
) -> dict[str, Any]:
    """Problems of the inputs, else the mounts they give."""
    found: list[str] = []
    if client not in CLIENTS:
        found.append(f"tpu_storage_gcs_client is {_shown(client)}; allowed: gcsfuse or rclone.")
    if endpoint and (not isinstance(endpoint, str) or not _ENDPOINT.fullmatch(endpoint)):
        found.append(
            f"tpu_storage_gcs_endpoint is {_shown(endpoint)}: it must be an http(s) URL of a GCS"
            " JSON API without commas or spaces, such as http://10.0.0.5:9023/storage/v1/."
        )
    elif endpoint and client == "gcsfuse":
        found.append(
            "tpu_storage_gcs_endpoint is set but only the rclone client uses it; it must be empty"
            " with tpu_storage_gcs_client gcsfuse."
        )
    if _bool(anonymous) is None:
        found.append(f"tpu_storage_gcs_anonymous is {_shown(anonymous)}; allowed: true or false.")
    lists = {"tpu_storage_buckets": buckets, "tpu_storage_nfs": nfs}
    for name, value in lists.items():
        if not isinstance(value, list):
            found.append(f"{name} is {_shown(value)}: it must be a list (empty for none).")
    if found:
        return {"problems": found, "buckets": [], "nfs": []}
    paths: dict[str, str] = {}
    for name, value in lists.items():
        keys, required = (
            (BUCKET_KEYS, ("bucket", "path")) if name == "tpu_storage_buckets"
            else (NFS_KEYS, ("server", "export", "path"))
        )  # fmt: skip
        for index, entry in enumerate(value):
            where = f"{name}[{index}]"
            shape = _entry_problems(entry, where, keys, required)
            if shape:
                found += shape
                continue
            found.append(path_problem(entry["path"], f"{where}.path"))
            if home and entry["path"] == home:
                found.append(
                    f"{where}.path is the login user's home {home}; allowed: a folder in it."
                )
            if entry["path"] in paths:
                other = paths[entry["path"]]
                found.append(
                    f"{where}.path {entry['path']} is also the mount point of {other}; each entry"
                    " must have a mount point of its own."
                )
            paths.setdefault(entry["path"], where)
            found += (
                _bucket_problems(entry, where, client)
                if name == "tpu_storage_buckets"
                else _nfs_problems(entry, where)
            )
    found = [problem for problem in found if problem]
    if found:
        return {"problems": found, "buckets": [], "nfs": []}
    ids = [f"uid={uid}", f"gid={gid}"] if uid != "" and gid != "" else []
    return {
        "problems": [],
        "buckets": [_bucket_mount(e, client, endpoint, _bool(anonymous), ids) for e in buckets],
        "nfs": [_nfs_mount(e) for e in nfs],
    }


class FilterModule:
    """cloudtpu.pod.storage_plan."""

    def filters(self) -> dict[str, Any]:
        return {"storage_plan": storage_plan}
