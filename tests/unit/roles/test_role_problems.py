"""The roles' preflight rules (plugins/module_utils/tpu_role_rules*.py) and their engine.

Every role's defaults pass; each bad value gives one message that names the variable, shows the
value (never a secret's) and says what is allowed; a rule reads only the role's options (its
argument spec, the contract), the login contract and the facts its table names.
tests/integration/test_bad_input_roles*.py runs the same rules through ansible-playbook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_checks import (
    RoleValues,
    readable_names,
    run_stages,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_role_rules import (
    INTERNAL,
    RULES,
    role_problems,
)

ROLES = Path(__file__).resolve().parents[3] / "roles"
LOGIN = {"user": "tpu", "home": "/home/tpu", "venv": "/home/tpu/.venv310"}
# The defaults that are templates, as a worker of a pod of one node resolves them.
RESOLVED = {
    "tpu_framework_installer": "uv",
    "tpu_framework_uv_bin": "/opt/cloudtpu/uv/bin/uv",
    "tpu_framework_device_globs": ["/dev/accel*", "/dev/vfio/[0-9]*"],
    "tpu_libtpu_device_glob": "/dev/accel*",
    "tpu_nfs_share_path": "/srv/nfs/shared",
    "tpu_nfs_owner": "tpu",
}
# The role's own facts, as vars/main.yml gives them on the coordinator of a two-worker pod.
FACTS = {
    "tpu_nfs__server": "pod-w0",
    "tpu_nfs__is_server": True,
    "tpu_nfs__clients": ["10.0.0.2", "10.0.0.3"],
    "tpu_storage__gcsfuse": False,
    "tpu_storage__check": {"problems": []},
    "tpu_base__found": {"zone": True, "user": True, "shells": ["/bin/bash"], "nofile": ""},
    "ansible_check_mode": False,
    "inventory_hostname": "pod-w0",
    "hostvars": {"pod-w0": {}, "pod-w1": {}},
}


def _options(table: str) -> dict[str, Any]:
    role = table.split(":")[0]
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    return spec["argument_specs"]["main"]["options"]


def values_of(role: str, read: set[str] | None = None, **changes: Any) -> RoleValues:
    """The role's defaults with ``changes``; the names read are added to ``read``."""
    defaults = ROLES / role.split(":")[0] / "defaults" / "main.yml"
    values = yaml.safe_load(defaults.read_text()) or {}
    values = {**values, **{k: v for k, v in RESOLVED.items() if k in values}, **FACTS, **changes}
    login = changes.pop("login", LOGIN)

    def get(name: str) -> Any:
        if read is not None:
            read.add(name)
        return values[name]

    return RoleValues(get, lambda: login)


def problems(role: str, **changes: Any) -> list[str]:
    return role_problems(role, values_of(role, **changes))


@pytest.mark.parametrize("role", sorted(RULES))
def test_the_defaults_pass(role: str) -> None:
    assert problems(role) == []


@pytest.mark.parametrize("role", sorted(RULES))
def test_rules_read_only_the_contract(role: str) -> None:
    """What the rules read, with the defaults and with every variable wrong at once, is the
    role's options, the facts its table names and the host's name."""
    allowed = readable_names(_options(role), INTERNAL.get(role, ()))
    wrong = ({name: object() for name in _options(role)}, {name: "x" for name in _options(role)})
    for changes in ({}, *wrong):
        read: set[str] = set()
        run_stages(RULES[role], values_of(role, read, **changes))
        assert read <= allowed, sorted(read - allowed)


def test_every_role_with_a_preflight_has_rules_and_calls_them_once() -> None:
    for preflight in [*sorted(ROLES.glob("*/tasks/preflight.yml")), ROLES / "apt/tasks/main.yml"]:
        role = preflight.parent.parent.name
        text = preflight.read_text()
        assert role in RULES, role
        assert text.count("cloudtpu.pod.role_problems") == 1, preflight
        assert f"query('cloudtpu.pod.role_problems', '{role}')" in text, preflight


# role, the variables changed, what the one message must hold (variable, value, allowed)
CASES = [
    ("apt", {"tpu_apt_retries": 500}, ["tpu_apt_retries is 500", "0 to 100"]),
    ("apt", {"tpu_apt_caller": "base", "tpu_apt_lock_timeout": -1}, ["tpu_base_apt_lock_timeout"]),
    ("apt", {"tpu_apt_attempt_timeout": 10}, ["tpu_apt_attempt_timeout", "30 to 86400"]),
    ("apt", {"tpu_apt_pod_cache_port": "http"}, ["tpu_apt_pod_cache_port", "http"]),
    ("base", {"tpu_base_apt_retries": 500}, ["tpu_base_apt_retries", "500", "0 to 100"]),
    ("base", {"tpu_base_unattended_upgrades": "off"}, ["tpu_base_unattended_upgrades", '"off"']),
    ("base", {"tpu_base_packages": "htop git"}, ["tpu_base_packages", "htop git", "Debian"]),
    ("base", {"tpu_base_packages_extra": ["htop\n"]}, ["tpu_base_packages_extra", "htop"]),
    ("base", {"tpu_base_timezone": "Europe/../etc"}, ["tpu_base_timezone", "Etc/UTC"]),
    ("base", {"tpu_base_user_shell": "/bin/../tmp/sh"}, ["tpu_base_user_shell", "/usr/bin/zsh"]),
    ("base", {"tpu_base_nofile": 100}, ["tpu_base_nofile", "100", "(or 0 to leave the limits)"]),
    ("base", {"login": {**LOGIN, "user": ""}}, ["The login user is empty."]),
    ("python", {"tpu_python_version": 3.1}, ['tpu_python_version is "3.1" (float)', "'3.10'"]),
    ("python", {"tpu_python_venv_login_file": "/etc/profile"}, ["relative to the owner's home"]),
    ("python", {"tpu_python_uv_version": "latest"}, ["tpu_python_uv_version", "0.13.8"]),
    ("python", {"tpu_python_uv_link": "/usr/local/bin/python3"}, ["tpu_python_uv_link", "uv"]),
    ("python", {"tpu_python_uv_dir": "/etc/uv"}, ["tpu_python_uv_dir", "/etc/uv", "/opt"]),
    ("python", {"tpu_python_ca_bundle": "certs/ca.pem"}, ["tpu_python_ca_bundle", "PEM"]),
    ("python", {"tpu_python_pod_cache": "maybe"}, ["tpu_python_pod_cache", "maybe", "true"]),
    ("python", {"tpu_python_pod_cache_port": 80}, ["tpu_python_pod_cache_port", "1024 to"]),
    ("python", {"login": {**LOGIN, "venv": "/srv/venv"}}, ["tpu_venv_path", "/srv/venv"]),
    ("framework", {"tpu_framework_version": "newest"}, ["tpu_framework_version", "'latest'"]),
    ("framework", {"tpu_framework_torch_version": "2.9 or"}, ["torch_version", "'2.9.0'"]),
    ("framework", {"tpu_framework_extra_requirements": ["--pre"]}, ["--pre", "specifier"]),
    ("framework", {"tpu_framework_requirements_file": "/nonexistent"}, ["readable file"]),
    ("framework", {"tpu_framework_uv_bin": "uv"}, ["tpu_framework_uv_bin", "<tpu_python_uv"]),
    ("framework", {"tpu_framework_ca_bundle": "ca.pem"}, ["tpu_framework_ca_bundle", "ca.pem"]),
    ("framework", {"tpu_framework_tpu_info": "maybe"}, ["tpu_framework_tpu_info", "maybe"]),
    ("framework", {"tpu_framework_pod_cache_dir": "/tmp"}, ["pod_cache_dir", "/var/cache"]),
    ("framework", {"tpu_framework_env": {"BAD-NAME": "x"}}, ["BAD-NAME", "environment variable"]),
    ("framework", {"tpu_framework_require_tpu": "maybe"}, ["maybe", "auto, true or false"]),
    ("framework", {"tpu_framework_check_timeout": 0}, ["tpu_framework_check_timeout", "1 to"]),
    ("framework", {"tpu_framework_device_globs": []}, ["device_globs", "non-empty list"]),
    ("framework", {"tpu_framework_device_globs": ["/dev/fuse"]}, ["/dev/fuse", "/dev/accel*"]),
    ("tcmalloc", {"tpu_tcmalloc_mode": True}, ["tpu_tcmalloc_mode", '"True"', "disable"]),
    ("tcmalloc", {"tpu_tcmalloc_library": "/usr/lib/../libtcmalloc.so"}, ["normalised"]),
    ("tcmalloc", {"login": {**LOGIN, "venv": "/data/venv"}}, ["tpu_venv_path", "/data/venv"]),
    ("libtpu", {"tpu_libtpu_device_glob": "/dev/*"}, ["tpu_libtpu_device_glob", "/dev/*"]),
    ("libtpu", {"tpu_libtpu_lock_files": []}, ["tpu_libtpu_lock_files", "non-empty list"]),
    ("libtpu", {"tpu_libtpu_lock_files": ["/etc/passwd"]}, ["/etc/passwd", "directly in /tmp"]),
    ("libtpu", {"tpu_libtpu_log_dir": "/tmp/run"}, ["tpu_libtpu_log_dir", "tpu_logs"]),
    ("libtpu", {"tpu_libtpu_kill": "maybe"}, ["tpu_libtpu_kill", "maybe", "true or false"]),
    ("libtpu", {"tpu_libtpu_kill_users": ["root;reboot"]}, ["kill_users", "root;reboot", "uids"]),
    ("libtpu", {"tpu_libtpu_kill_grace": True}, ["tpu_libtpu_kill_grace", "true", "0 to 3600"]),
    ("remote_shell", {"tpu_remote_shell_locale": "en_US"}, ["tpu_remote_shell_locale", "UTF-8"]),
    (
        "remote_shell",
        {"tpu_remote_shell_byobu": False, "tpu_remote_shell_byobu_on_login": "enable"},
        ["tpu_remote_shell_byobu_on_login", "Set tpu_remote_shell_byobu: true"],
    ),
    ("remote_shell", {"tpu_remote_shell_apt_retries": -1}, ["tpu_remote_shell_apt_retries"]),
    (
        "nfs",
        {"tpu_nfs_export_path": "/home/tpu/share", "tpu_nfs_backend": "ganesha"},
        ["tpu_nfs_export_path", "/home/tpu"],
    ),
    ("nfs", {"tpu_nfs_share_path": "/other"}, ["tpu_nfs_share_path is '/other'", "ganesha"]),
    ("nfs", {"tpu_nfs_mount": "on"}, ["tpu_nfs_mount", "auto, true or false"]),
    ("nfs", {"tpu_nfs_mode": "0777"}, ["tpu_nfs_mode is '0777'", '"0770"']),
    ("nfs", {"tpu_nfs_owner": "Bad User"}, ["tpu_nfs_owner is 'Bad User'", "user/group names"]),
    ("nfs", {"tpu_nfs_export_cidrs": ["0.0.0.0/0"]}, ["tpu_nfs_export_cidrs", "for the pod"]),
    ("nfs", {"tpu_nfs_external_server": "*"}, ["tpu_nfs_external_server is '*'", "one NFS"]),
    ("nfs", {"tpu_nfs_mount_options": ["vers=3", "_netdev", "nofail"]}, ["vers=3", "other than 4"]),
    ("nfs", {"tpu_nfs__server": "gone"}, ["pod-w0 has no NFS server", "Set tpu_nfs_server_host"]),
    ("nfs", {"tpu_nfs__clients": ["0.0.0.0/0"]}, ["would be exported to", "never to *"]),
    ("storage", {"tpu_storage_gcsfuse_apt_url": "ftp://x"}, ["gcsfuse_apt_url", "ftp://x"]),
    (
        "storage",
        {
            "tpu_storage_gcsfuse_apt_url": "https://packages.example/apt",
            "tpu_storage_gcsfuse_key_url": "",
            "tpu_storage__gcsfuse": True,
        },
        ["tpu_storage_gcsfuse_key_url", "http(s) URL"],
    ),
    ("storage", {"tpu_storage__check": {"problems": ["from the plan"]}}, ["from the plan"]),
    (
        "base:host",
        {
            "tpu_base_timezone": "Mars/Olympus",
            "tpu_base__found": {**FACTS["tpu_base__found"], "zone": False},
        },
        ['tpu_base_timezone "Mars/Olympus" is not a time zone of this host', "timedatectl"],
    ),
    (
        "base:host",
        {"tpu_base_user_shell": "/bin/zsh"},
        ['tpu_base_user_shell "/bin/zsh" is not listed in /etc/shells', "one of /bin/bash"],
    ),
    (
        "base:host",
        {
            "tpu_base_nofile": "65536",
            "tpu_base__found": {**FACTS["tpu_base__found"], "nofile": "4096"},
        },
        ["tpu_base_nofile 65536 is above what this host allows", "that far: 4096"],
    ),
    (
        "base:host",
        {"tpu_base_nofile": 1024, "tpu_base__found": {**FACTS["tpu_base__found"], "user": False}},
        ['The login user "tpu" does not exist on this host', "tpu_login_user"],
    ),
]


@pytest.mark.parametrize(
    ("role", "changes", "words"), CASES, ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CASES]
)
def test_a_bad_value_gives_one_clear_message(role: str, changes: dict, words: list) -> None:
    found = problems(role, **changes)
    assert len(found) == 1, found
    for word in words:
        assert word in found[0], (word, found[0])


def test_secrets_are_not_shown() -> None:
    index = problems("framework", tpu_framework_index_url="ftp://user:s3cret@mirror/simple")
    env = problems("framework", tpu_framework_env={"HF_TOKEN": ["s3cret"]})
    python = problems("python", tpu_python_index_url="user:s3cret@mirror")
    assert index and env and python
    for found in (index, env, python):
        assert "s3cret" not in " ".join(found), found
    assert "HF_TOKEN" in env[0]


def test_every_problem_is_reported_at_once() -> None:
    found = problems("libtpu", tpu_libtpu_kill="maybe", tpu_libtpu_kill_grace=-1)
    assert [p.split(" ")[0] for p in found] == ["tpu_libtpu_kill", "tpu_libtpu_kill_grace"]


def test_the_pod_is_looked_at_only_once_the_variables_are_right() -> None:
    read: set[str] = set()
    found = run_stages(
        RULES["nfs"], values_of("nfs", read, tpu_nfs_mode="0777", tpu_nfs__server="")
    )
    assert len(found) == 1 and "tpu_nfs_mode" in found[0]
    assert "tpu_nfs__server" not in read
    found = problems("nfs", tpu_nfs__server="", tpu_nfs__clients=["*"])
    assert len(found) == 1 and "has no NFS server" in found[0]


def test_an_external_server_needs_no_server_in_the_pod() -> None:
    assert (
        problems(
            "nfs",
            tpu_nfs_external_server="10.1.2.3",
            tpu_nfs__server="",
            **{"tpu_nfs__is_server": False},
        )
        == []
    )


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(KeyError, match="roles with rules"):
        role_problems("nope", values_of("base"))


class _Templar:
    def template(self, value: Any) -> Any:
        return value


class _Login:
    def run(self, terms: list, variables: dict) -> list:
        return [LOGIN]


def _lookup(monkeypatch: pytest.MonkeyPatch) -> Any:
    from ansible_collections.cloudtpu.pod.plugins.lookup import role_problems as plugin

    monkeypatch.setattr(plugin.lookup_loader, "get", lambda *args, **kwargs: _Login())
    lookup = plugin.LookupModule()
    lookup._templar = _Templar()
    return lookup


def test_the_lookup_reads_the_roles_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    lookup = _lookup(monkeypatch)
    defaults = yaml.safe_load((ROLES / "tcmalloc" / "defaults" / "main.yml").read_text())
    variables = {**defaults, "role_path": str(ROLES / "tcmalloc")}
    assert lookup.run(["tcmalloc"], variables) == []
    found = lookup.run(["tcmalloc"], {**variables, "tpu_tcmalloc_mode": "off"})
    assert len(found) == 1 and "tpu_tcmalloc_mode" in found[0]


def test_the_lookup_refuses_what_is_not_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    from ansible.errors import AnsibleLookupError

    lookup = _lookup(monkeypatch)
    with pytest.raises(AnsibleLookupError, match="one role name"):
        lookup.run(["nope"], {})
    with pytest.raises(AnsibleLookupError, match="only in a role"):
        lookup.run(["base"], {})
    # the base rules run against the tcmalloc role's argument spec: they read names it lacks
    with pytest.raises(AnsibleLookupError, match="not an option"):
        lookup.run(["base"], {"role_path": str(ROLES / "tcmalloc")})


def test_check_mode_leaves_what_is_not_installed_yet() -> None:
    found = {**FACTS["tpu_base__found"], "zone": False}
    changes = {"tpu_base_timezone": "Asia/Tokyo", "tpu_base_user_shell": "/bin/zsh"}
    assert problems("base:host", tpu_base__found=found, ansible_check_mode=True, **changes) == []
    assert len(problems("base:host", tpu_base__found=found, **changes)) == 2
