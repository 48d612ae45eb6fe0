"""One SSH config file of playbooks/ssh_config.yml: module_utils/tpu_ssh_config_file.py (the
checks of the file's options and of each worker's entry, the managed block, how to connect)
and the filter ssh_config_file over it."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter import ssh_config_file as file_plugin
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_file import (
    config_block,
    connect_message,
    entry_problem,
    file_plan,
    options_problem,
)

HOME = "/home/me"
W0 = {
    "host": "pod-a-w0",
    "hostname": "10.0.0.2",
    "user": "tpu",
    "port": "22",
    "worker_id": "0",
    "identity_file": "/home/me/.ssh/id",
    "known_hosts": "/home/me/.ssh/known",
}
W1 = {**W0, "host": "pod-a-w1", "hostname": "10.0.0.3", "worker_id": "1", "known_hosts": ""}
FILE = {
    "path": f"{HOME}/.ssh/config",
    "user": "",
    "identity_file": "",
    "proxy_jump": "",
    "port": "",
    "forwards": [],
}
PLAY = {"name": "inventories/gcp", "group": "tpu", "hosts": ["pod-a-w0", "pod-a-w1"], "home": HOME}


def test_registered():
    assert file_plugin.FilterModule().filters() == {"ssh_config_file": file_plan}


def test_a_plain_file_gets_one_entry_per_worker_then_host_star():
    plan = file_plan([W0, W1], FILE, PLAY)
    assert plan["problem"] == "" and plan["entry_problems"] == {"pod-a-w0": "", "pod-a-w1": ""}
    assert plan["block"] == (
        "Host pod-a-w0\n"
        "    HostName 10.0.0.2\n"
        "    User tpu\n"
        "    Port 22\n"
        "    IdentityFile /home/me/.ssh/id\n"
        '    UserKnownHostsFile "/home/me/.ssh/known"\n'
        "    StrictHostKeyChecking accept-new\n"
        "    ServerAliveInterval 30\n"
        "\n"
        "Host pod-a-w1\n"
        "    HostName 10.0.0.3\n"
        "    User tpu\n"
        "    Port 22\n"
        "    IdentityFile /home/me/.ssh/id\n"
        "    StrictHostKeyChecking accept-new\n"
        "    ServerAliveInterval 30\n"
        "\n"
        "Host *\n"
    )
    assert plan["message"] == (
        f"2 worker(s) in {HOME}/.ssh/config; for example `ssh pod-a-w0` or `mosh pod-a-w0 -- "
        "byobu` (mosh needs UDP 60000-61000 open: playbooks/firewall.yml). "
    )


def test_the_files_options_stand_in_for_ansibles_and_worker_0_gets_the_forwards():
    file = {**FILE, "path": "/srv/demo/ssh_config", "user": "bob", "port": 2222,
            "identity_file": "", "proxy_jump": "bastion", "forwards": ["jupyter"]}  # fmt: skip
    plan = file_plan([W0, W1], file, PLAY)
    assert [(e["user"], e["port"], e["identity_file"]) for e in plan["entries"]] == [
        ("bob", "2222", "/home/me/.ssh/id"),
        ("bob", "2222", "/home/me/.ssh/id"),
    ]
    w0, w1, star = plan["block"].split("\n\n")
    assert "    ProxyJump bastion\n" in w0 and "    ProxyJump bastion\n" in w1
    assert "    LocalForward 127.0.0.1:8888 localhost:8888\n    ExitOnForwardFailure yes\n" in w0
    assert "Forward" not in w1 and star == "Host *\n"
    assert plan["message"] == (
        "2 worker(s) in /srv/demo/ssh_config; for example `ssh -F /srv/demo/ssh_config pod-a-w0` "
        "or `mosh --ssh='ssh -F /srv/demo/ssh_config' pod-a-w0 -- byobu` (mosh needs UDP "
        "60000-61000 open: playbooks/firewall.yml). `ssh -F /srv/demo/ssh_config -N pod-a-w0` "
        "holds its port forwards open: 127.0.0.1:8888 -> localhost:8888. "
    )


def test_a_message_per_pod_with_forwards():
    other = {**W0, "host": "pod-b-w0"}
    text = connect_message([W0, W1, other], f"{HOME}/.ssh/config", HOME, ["tensorboard"])
    assert text.count("holds its port forwards open: 127.0.0.1:6006 -> localhost:6006. ") == 2
    assert "`ssh -N pod-b-w0`" in text


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"path": "relative/config"}, "tpu_ssh_config_path is 'relative/config', it must be a"),
        ({"path": "/home/me/.ssh/"}, "tpu_ssh_config_path is '/home/me/.ssh/'"),
        ({"identity_file": "/a key"}, "tpu_ssh_config_identity_file is '/a key', it must be one"),
        ({"proxy_jump": "a b"}, "tpu_ssh_config_proxy_jump is 'a b', it must be [user@]host"),
        ({"user": "Bob"}, "tpu_ssh_config_user is 'Bob', it must be a user name."),
        ({"name": "a\nb"}, "tpu_ssh_config_name must be one line."),
        ({"forwards": ["notebook"]}, 'tpu_ssh_config_forwards item 1 is "notebook"'),
    ],
)
def test_each_refused_option_is_named_with_its_value(change, words):
    problem = options_problem({**FILE, "name": "n", "group": "tpu", **change}, ["h"])
    assert problem.startswith("Refusing to write the SSH config: ") and words in problem, problem
    plan = file_plan(
        [W0], {**FILE, **change}, {**PLAY, **({"name": change["name"]} if "name" in change else {})}
    )
    assert plan["problem"] and plan["block"] == "" and plan["message"] == ""


def test_a_group_without_hosts_and_several_problems_in_one_message():
    problem = options_problem({**FILE, "name": "n", "group": "gpu", "user": "A", "path": "x"}, [])
    assert problem == (
        "Refusing to write the SSH config: tpu_ssh_config_path is 'x', it must be a file path "
        "(absolute, or starting with ~/). group 'gpu' (tpu_ssh_config_group) has no hosts in "
        "this inventory. tpu_ssh_config_user is 'A', it must be a user name."
    )


def test_a_value_that_is_not_text_never_matches():
    assert "tpu_ssh_config_path is 'None'" in options_problem({**FILE, "path": None}, ["h"])
    assert "its port '22'" in entry_problem({**W0, "port": 22})


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"host": "pod-*"}, "its inventory name must be letters, digits, . _ and -"),
        ({"hostname": "a b"}, "its ansible_host 'a b' must be one address or DNS name."),
        ({"user": "Root"}, "its user 'Root' (tpu_ssh_config_user, else ansible_user)"),
        ({"port": "0"}, "its port '0' (tpu_ssh_config_port, else ansible_port) must be a number"),
        ({"port": "65536"}, "its port '65536'"),
        ({"identity_file": "/a#b"}, "its key '/a#b' (ansible_ssh_private_key_file, else"),
        ({"known_hosts": 'a"b'}, "its UserKnownHostsFile 'a\"b' (from Ansible's ssh arguments)"),
    ],
)
def test_each_refused_entry_names_the_worker(change, words):
    entry = {**W0, **change}
    problem = entry_problem(entry)
    assert problem.startswith(f"Worker '{entry['host']}' cannot get an SSH config entry: ")
    assert words in problem, problem
    plan = file_plan([entry, W1], FILE, PLAY)
    assert plan["entry_problems"] == {entry["host"]: problem, "pod-a-w1": ""}
    assert plan["block"] == ""


def test_no_forward_and_no_worker_0_give_no_forward_lines():
    assert "Forward" not in config_block([W1], "", ["jupyter"])
    assert config_block([], "", None) == "Host *\n"
