"""The storage role's plan (plugins/filter/storage_plan.py) and its two new checks."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.storage_plan import storage_plan
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import bucket_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import host_problem

BUCKET = {"bucket": "my-ckpt", "path": "/mnt/ckpt"}
NFS = {"server": "10.0.0.2", "export": "/vol1", "path": "/mnt/filestore"}


@pytest.mark.parametrize(
    "name", ["abc", "my-ckpt_01", "a.b.c", "x" * 63, ".".join(["y" * 63] * 3)[:222].rstrip(".")]
)
def test_bucket_names_google_allows(name: str) -> None:
    assert bucket_problem(name, "b") == ""


@pytest.mark.parametrize(
    "name",
    ["ab", "x" * 64, "My-Bucket", "gs://x", "-abc", "abc-", "a b", "192.168.1.1", "goog-x",
     "my-google-bkt", "g00gle", "a..b", "abc\n", 7, None, "a/b"],
)  # fmt: skip
def test_bucket_names_google_refuses(name: object) -> None:
    problem = bucket_problem(name, "tpu_storage_buckets[0].bucket")
    assert problem.startswith("tpu_storage_buckets[0].bucket is "), problem
    assert "allowed: a bucket name" in problem


@pytest.mark.parametrize("host", ["10.0.0.2", "fd00::2", "nfs.example.internal", "filestore-1"])
def test_hosts(host: str) -> None:
    assert host_problem(host, "s") == ""


@pytest.mark.parametrize(
    "host", ["", "10.0.0.2:/vol1", "a b", "-x", "x_y", "1.2.3.4.5", "fe80::1%eth0", "a\n", 3]
)
def test_not_hosts(host: object) -> None:
    assert host_problem(host, "srv").startswith("srv is ")


def test_rclone_entry_for_an_emulator() -> None:
    plan = storage_plan(
        [{**BUCKET, "file_cache_max_size_mb": 64, "cache_dir": "/var/cache/ckpt"}],
        [NFS],
        "rclone",
        endpoint="http://172.17.0.1:9023/storage/v1/",
        anonymous=True,
        uid="1000",
        gid="1001",
    )
    assert plan["problems"] == []
    (mount,) = plan["buckets"]
    assert mount["src"] == ":gcs:my-ckpt" and mount["fstype"] == "rclone"
    assert mount["opts"] == (
        "rw,_netdev,nofail,args2env,config=/dev/null,"
        "gcs_endpoint=http://172.17.0.1:9023/storage/v1/,gcs_anonymous=true,uid=1000,gid=1001,"
        "umask=027,vfs_cache_mode=minimal,vfs_cache_max_size=64M,cache_dir=/var/cache/ckpt,"
        "allow_other,default_permissions"
    )
    assert plan["nfs"] == [
        {"path": "/mnt/filestore", "src": "10.0.0.2:/vol1", "fstype": "nfs",
         "opts": "_netdev,nofail,hard,timeo=600,retrans=3", "state": "mounted"}
    ]  # fmt: skip


def test_gcsfuse_entry_flags() -> None:
    entry = {**BUCKET, "read_only": True, "allow_other": False, "options": ["noatime"]}
    plan = storage_plan([entry, {**BUCKET, "path": "/mnt/b", "state": "absent"}], [], "gcsfuse")
    first, second = plan["buckets"]
    assert first["src"] == "my-ckpt" and first["fstype"] == "gcsfuse"
    assert first["opts"] == "ro,_netdev,nofail,implicit_dirs,file_mode=640,dir_mode=750,noatime"
    assert second["state"] == "absent"


def test_ipv6_nfs_server_is_bracketed() -> None:
    plan = storage_plan([], [{**NFS, "server": "fd00::2"}], "gcsfuse")
    assert plan["nfs"][0]["src"] == "[fd00::2]:/vol1"


@pytest.mark.parametrize(
    ("buckets", "nfs", "extra", "says"),
    [
        ([{"path": "/mnt/x"}], [], {}, "tpu_storage_buckets[0] lacks bucket"),
        ([{**BUCKET, "path": "/etc/ckpt"}], [], {}, "tpu_storage_buckets[0].path is \"/etc/ckpt\""),
        ([{**BUCKET, "path": "/mnt"}], [], {}, "it is a system folder"),
        ([{**BUCKET, "bucket": "Bad"}], [], {}, "tpu_storage_buckets[0].bucket is \"Bad\""),
        ([{**BUCKET, "colour": 1}], [], {}, "unknown keys ['colour']"),
        ([{**BUCKET, "state": "mounted"}], [], {}, "allowed: present or absent"),
        ([{**BUCKET, "file_cache_max_size_mb": 10}], [], {}, "gcsfuse keeps its file cache only"),
        ([{**BUCKET, "options": ["a,b"]}], [], {}, "list of single mount options"),
        ([{**BUCKET, "implicit_dirs": "maybe"}], [], {}, "implicit_dirs is \"maybe\""),
        ([BUCKET], [{**NFS, "path": "/mnt/ckpt"}], {}, "is also the mount point of"),
        ([], [{**NFS, "server": "10.0.0.2:/x"}], {}, "tpu_storage_nfs[0].server is"),
        ([], [{**NFS, "export": "vol1"}], {}, "tpu_storage_nfs[0].export is"),
        ([], [{**NFS, "options": ["hard"]}], {}, "must hold _netdev and nofail"),
        ([], [], {"client": "s3fs"}, "tpu_storage_gcs_client is \"s3fs\""),
        ([], [], {"endpoint": "http://x/,y"}, "tpu_storage_gcs_endpoint is"),
        ([], [], {"endpoint": "http://x:1/storage/v1/"}, "only the rclone client uses it"),
        ("x", [], {}, "tpu_storage_buckets is \"x\": it must be a list"),
        ([{**BUCKET, "path": "/home/u"}], [], {"home": "/home/u"}, "is the login user's home"),
    ],
)  # fmt: skip
def test_refusals(buckets: object, nfs: object, extra: dict, says: str) -> None:
    client = extra.pop("client", "gcsfuse")
    plan = storage_plan(buckets, nfs, client, **extra)
    assert plan["buckets"] == [] and plan["nfs"] == []
    assert any(says in problem for problem in plan["problems"]), plan["problems"]


def test_cache_in_dev_shm_is_allowed_but_not_dev_itself() -> None:
    ok = {**BUCKET, "file_cache_max_size_mb": -1, "cache_dir": "/dev/shm/gcsfuse"}
    assert storage_plan([ok], [], "gcsfuse")["problems"] == []
    bad = {**ok, "cache_dir": "/dev/sda"}
    assert "system folder /dev" in storage_plan([bad], [], "gcsfuse")["problems"][0]
