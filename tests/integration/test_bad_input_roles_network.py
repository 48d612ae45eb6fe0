"""The bad-input table of the roles that serve or reach the network: remote_shell (mosh and
byobu for the login user), nfs (a share of the pod and its exports) and storage (buckets and
external shares); every case refused before anything changes. The other roles are
test_bad_input_roles.py, which says how a table is run (tests/bad_input.py).

Every host must fail in the role's argument spec or preflight.yml (nfs: or the pod lookup right
after it, before the server tasks; remote_shell: or host.yml, which reads the login user's
passwd entry), with no task changed before, and the message must name the variable, show the
value and say what is allowed.
"""

from __future__ import annotations

import pytest

from tests.bad_input import (
    SYSTEM_PATHS,
    Case,
    RoleRuns,
    RoleTable,
    assert_big_enough,
    c,
    case_ids,
    table_cases,
    v,
)

REMOTE_SHELL = [
    v("locale-latin1", "tpu_remote_shell_locale", "en_US.ISO-8859-1", "ISO-8859-1"),
    v("locale-posix", "tpu_remote_shell_locale", "POSIX"),
    v("locale-shell", "tpu_remote_shell_locale", "en_US.utf8 ; rm", "utf8 ; rm"),
    v("locale-newline", "tpu_remote_shell_locale", "C.UTF-8\n", "C.UTF-8"),
    v("byobu-login-always", "tpu_remote_shell_byobu_on_login", "always"),
    c(
        "byobu-login-without-byobu",
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_remote_shell_byobu": False},
        "tpu_remote_shell_byobu",
        "enable",
    ),
    c(
        "login-user-space",
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_login_user": "Bad User"},
        "tpu_login_user",
        "Bad User",
    ),
    c(
        "login-user-missing",
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_login_user": "nosuchuser-x9"},
        "tpu_login_user",
        "nosuchuser-x9",
    ),
    v("mosh-maybe", "tpu_remote_shell_mosh", "maybe"),
    v("cache-word", "tpu_remote_shell_apt_cache_valid_time", "soon"),
    v("retries-word", "tpu_remote_shell_apt_retries", "often"),
    v("retries-big", "tpu_remote_shell_apt_retries", 500),
    v("retries-negative", "tpu_remote_shell_apt_retries", -1),
]

WORLD = "0.0.0.0/0"
NFS = [
    v("export-star", "tpu_nfs_export_cidrs", ["*"], "*"),
    v("export-world", "tpu_nfs_export_cidrs", ["10.0.0.0/8", WORLD], WORLD),
    v("export-two-halves", "tpu_nfs_export_cidrs", ["0.0.0.0/1", "128.0.0.0/1"], "128.0.0.0/1"),
    v("export-world-v6", "tpu_nfs_export_cidrs", ["::/0"], "::/0"),
    v("export-v6-halves", "tpu_nfs_export_cidrs", ["::/1", "8000::/1"], "8000::/1"),
    # one range broader than a /8 (IPv6: a /32 of the internet) is open to much of the world
    v("export-half", "tpu_nfs_export_cidrs", ["10.0.0.0/8", "128.0.0.0/1"], "128.0.0.0/1"),
    v("export-v6-broad", "tpu_nfs_export_cidrs", ["2001::/16"], "2001::/16"),
    v("export-path-bidi", "tpu_nfs_export_path", "/srv/nfs\u202e", "/srv/nfs"),
    v("export-v6-malformed", "tpu_nfs_export_cidrs", ["fd00::zz/64"], "fd00::zz/64"),
    v("export-prefix-0", "tpu_nfs_export_cidrs", ["10.1.2.3/0"], "10.1.2.3/0"),
    v("export-bad-octet", "tpu_nfs_export_cidrs", ["10.0.0.300/24"], "10.0.0.300/24"),
    v("export-glob", "tpu_nfs_export_cidrs", ["*.internal"], "*.internal"),
    v("export-dict", "tpu_nfs_export_cidrs", {"net": "10.0.0.0/8"}, "dict"),
    v("export-relative", "tpu_nfs_export_path", "srv/nfs"),
    *[
        v(f"export-system-{i}", "tpu_nfs_export_path", path, path)
        for i, path in enumerate(SYSTEM_PATHS)
    ],
    v("mount-relative", "tpu_nfs_mount_point", "mnt/shared"),
    v("mount-tmp", "tpu_nfs_mount_point", "/tmp"),
    v("mount-home", "tpu_nfs_mount_point", "/home"),
    v("mount-mnt", "tpu_nfs_mount_point", "/mnt"),
    v("mount-etc", "tpu_nfs_mount_point", "/etc/shared"),
    v("mount-space", "tpu_nfs_mount_point", "/mnt/my share"),
    v("mount-var-run", "tpu_nfs_mount_point", "/var/run/shared"),
    v("mount-var-lock", "tpu_nfs_mount_point", "/var/lock/shared"),
    v("export-var-spool", "tpu_nfs_export_path", "/var/spool/shared"),
    v("export-var-mail", "tpu_nfs_export_path", "/var/mail"),
    # the login user's home or inside it (its .ssh) is never shared or mounted over
    *[
        c(f"{side}-{name}", {"tpu_login_user": "tpu", var: path}, var, path)
        for side, var in (("export", "tpu_nfs_export_path"), ("mount", "tpu_nfs_mount_point"))
        for name, path in (("login-home", "/home/tpu"), ("ssh", "/home/tpu/.ssh"))
    ],
    c(
        "share-dotdot",
        {"tpu_nfs_backend": "ganesha", "tpu_nfs_share_path": "/srv/../etc"},
        "tpu_nfs_share_path",
        "/srv/../etc",
    ),
    v("kernel-pseudo", "tpu_nfs_share_path", "/shared"),
    v("backend", "tpu_nfs_backend", "nfsd"),
    v("mode-world", "tpu_nfs_mode", "0777"),
    v("mode-letters", "tpu_nfs_mode", "rwxrwx---"),
    v("mount-switch", "tpu_nfs_mount", "sometimes"),
    v("start-maybe", "tpu_nfs_server_start", "maybe"),
    v("no-nofail", "tpu_nfs_mount_options", ["_netdev", "hard"], "hard"),
    v("nfs-v3", "tpu_nfs_mount_options", ["_netdev", "nofail", "nfsvers=3"], "nfsvers=3"),
    v("read-only-maybe", "tpu_nfs_read_only", "maybe"),
    v("squash", "tpu_nfs_squash", "squash_all"),
    v("owner-space", "tpu_nfs_owner", "Bad User"),
    v("owner-newline", "tpu_nfs_owner", "tpu\n", "tpu"),
    v("option-newline", "tpu_nfs_mount_options", ["_netdev", "nofail", "hard\n"], "hard"),
    v("external-glob", "tpu_nfs_external_server", "*.example.com"),
    v("retries-word", "tpu_nfs_apt_retries", "often"),
    v("retries-negative", "tpu_nfs_apt_retries", -1),
    v("retries-big", "tpu_nfs_apt_retries", 101),
]

STORAGE_NFS = {"server": "10.0.0.2", "export": "/vol1", "path": "/mnt/filestore"}
STORAGE = [
    v("bucket-upper", "tpu_storage_buckets", [{"bucket": "Ckpt", "path": "/mnt/c"}], "Ckpt"),
    v("bucket-gs-url", "tpu_storage_buckets", [{"bucket": "gs://ckpt", "path": "/mnt/c"}], "gs://"),
    v("bucket-google", "tpu_storage_buckets", [{"bucket": "google-x", "path": "/mnt/c"}], "google"),
    v("bucket-path-etc", "tpu_storage_buckets", [{"bucket": "ckpt", "path": "/etc/c"}], "/etc/c"),
    v("bucket-path-rel", "tpu_storage_buckets", [{"bucket": "ckpt", "path": "mnt/c"}], "mnt/c"),
    v("bucket-no-path", "tpu_storage_buckets", [{"bucket": "ckpt"}], "lacks path"),
    v("bucket-option-comma", "tpu_storage_buckets",
      [{"bucket": "ckpt", "path": "/mnt/c", "options": ["ro,exec"]}], "ro,exec"),
    v("nfs-server-path", "tpu_storage_nfs", [{**STORAGE_NFS, "server": "1.2.3.4:/"}], "1.2.3.4:/"),
    v("nfs-no-nofail", "tpu_storage_nfs", [{**STORAGE_NFS, "options": ["_netdev"]}], "nofail"),
    v("nfs-path-twice", "tpu_storage_nfs", [STORAGE_NFS, {**STORAGE_NFS, "export": "/vol2"}],
      "also the mount point"),
    v("endpoint-comma", "tpu_storage_gcs_endpoint", "http://x/,allow_other", "allow_other"),
    v("key-url-ftp", "tpu_storage_gcsfuse_key_url", "ftp://example.org/key"),
    # gcsfuse and a bucket, but no repository named (the collection names no package host)
    c("gcsfuse-no-repo", {"tpu_storage_buckets": [{"bucket": "ckpt", "path": "/mnt/c"}],
                          "tpu_storage_gcs_client": "gcsfuse"},
      "tpu_storage_gcsfuse_apt_url", '""'),
    v("retries-big", "tpu_storage_apt_retries", 500),
]  # fmt: skip

TABLE: RoleTable = {
    "remote_shell": (REMOTE_SHELL, {}, ("preflight.yml", "host.yml")),
    # a one-worker pod that serves itself; pod.yml only looks (the server and its addresses)
    "nfs": (NFS, {"tpu_nfs_server_host": "{{ inventory_hostname }}"}, ("preflight.yml", "pod.yml")),
    "storage": (STORAGE, {}, ("preflight.yml",)),
}
ALL = table_cases(TABLE)


def test_the_table_is_big_enough() -> None:
    assert_big_enough(ALL, 60)


@pytest.mark.parametrize(("role", "case"), ALL, ids=case_ids(ALL))
def test_bad_input_is_refused_before_any_change(refusals: RoleRuns, role: str, case: Case) -> None:
    refusals.assert_refused(role, case)
