"""The nfs role's decisions and reports (module_utils/tpu_nfs_status.py, the nfs_status filter)."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.nfs_status import FilterModule
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_nfs_status import nfs_status

SERVER = {
    "server": "pod-w0",
    "is_server": True,
    "server_address": "10.0.0.2",
    "clients": ["10.0.0.2", "10.0.0.3"],
}
CLIENT = {**SERVER, "is_server": False}
CAN = {"client": True, "server": True}
CANNOT = {"client": False, "server": False}
PATHS = {"export_path": "/srv/nfs/shared", "share_path": "/srv/nfs/shared"}


def status(plan=SERVER, kernel=CAN, mount="auto", start="auto", backend="kernel", **more):
    options = {**PATHS, "mount_point": "/mnt/shared", **more}
    return nfs_status(plan, kernel, mount, start, backend, **options)


def test_a_server_with_kernel_nfs_serves_and_mounts() -> None:
    found = status()
    assert found["start_now"] and found["mount_now"]
    assert found["server_status"] == (
        "nfs-server serves /srv/nfs/shared as /srv/nfs/shared to 10.0.0.2, 10.0.0.3."
    )
    assert found["mount_status"] == (
        "mounted: /srv/nfs/shared (bind mount on the server) on /mnt/shared."
    )


def test_a_client_names_its_server() -> None:
    found = status(CLIENT)
    assert found["server_status"] == "not the server: pod-w0 (10.0.0.2) serves /srv/nfs/shared."
    assert found["mount_status"] == "mounted: 10.0.0.2:/srv/nfs/shared on /mnt/shared."
    external = status(CLIENT, external_server="10.9.9.9")
    assert external["server_status"].startswith("not the server: the external server (10.0.0.2)")


@pytest.mark.parametrize(
    ("kernel", "mount", "start", "backend", "start_now", "mount_now"),
    [
        (CANNOT, "auto", "auto", "kernel", False, False),
        (CANNOT, "auto", "auto", "ganesha", True, False),
        (CANNOT, "true", "yes", "kernel", True, True),
        (CAN, "false", "no", "kernel", False, False),
        (CAN, "False", "FALSE", "kernel", False, False),
        ({"client": "true", "server": "false"}, "auto", "auto", "kernel", False, True),
    ],
)
def test_the_switches(kernel, mount, start, backend, start_now, mount_now) -> None:
    found = status(CLIENT, kernel, mount, start, backend)
    assert (found["start_now"], found["mount_now"]) == (start_now, mount_now)


def test_the_reports_of_what_did_not_happen() -> None:
    assert status(start="false")["server_status"] == (
        "nfs-server not started: tpu_nfs_server_start is false."
    )
    assert "this kernel has no NFS server" in status(kernel=CANNOT)["server_status"]
    assert status(backend="ganesha", kernel=CANNOT)["server_status"].startswith(
        "nfs-ganesha serves"
    )
    off = status(CLIENT, mount="no")["mount_status"]
    assert (
        off == "skipped: tpu_nfs_mount is false; 10.0.0.2:/srv/nfs/shared is in /etc/fstab for"
        " /mnt/shared."
    )
    assert "this kernel cannot mount NFS" in status(CLIENT, kernel=CANNOT)["mount_status"]
    same = status(mount_point="/srv/nfs/shared", mount="false")["mount_status"]
    assert same == "not needed: the server's shared folder is the mount point itself."
    # the server always mounts its own folder (a bind mount), whatever the kernel can
    assert status(kernel=CANNOT)["mount_status"].startswith("mounted: ")


def test_the_filter() -> None:
    found = FilterModule().filters()["nfs_status"](
        {**SERVER, "is_server": "False"},
        CAN,
        mount="auto",
        server_start="auto",
        backend="kernel",
        mount_point="/mnt/shared",
        **PATHS,
    )
    assert found["server_status"].startswith("not the server")
