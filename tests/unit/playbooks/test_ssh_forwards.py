"""Port forwards to worker 0 in playbooks/ssh_config.yml: module_utils/tpu_ssh_forwards.py (the
service table, what is accepted, the LocalForward lines) and its two filters."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter import ssh_config_forwards as lines_plugin
from ansible_collections.cloudtpu.pod.plugins.filter import (
    ssh_config_forwards_problem as problem_plugin,
)
from ansible_collections.cloudtpu.pod.plugins.filter.ssh_config_forwards import (
    ssh_config_forwards,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_forwards import (
    SERVICES,
    ForwardError,
    forward_lines,
    forwards_problem,
    parse_forwards,
)

NAME = "tpu_ssh_config_forwards"


def test_registered():
    assert lines_plugin.FilterModule().filters() == {"ssh_config_forwards": ssh_config_forwards}
    assert problem_plugin.FilterModule().filters() == {
        "ssh_config_forwards_problem": forwards_problem
    }


def test_the_service_table():
    assert SERVICES == {"jupyter": 8888, "tensorboard": 6006, "profiler": 9012}


@pytest.mark.parametrize("none", [None, "", [], ()])
def test_no_forward_gives_no_line(none):
    assert parse_forwards(none) == []
    assert forwards_problem(none) == ""
    assert forward_lines(none) == []


def test_services_and_mappings_are_parsed():
    got = parse_forwards(
        [
            "jupyter",
            "tensorboard",
            "profiler",
            {"local": 8080, "remote": 80},
            {"local": "9000", "remote": " 9001 ", "host": "10.0.0.5"},
            {"local": 9002, "remote": 22, "host": "[fd00::1]"},
            {"local": 9003, "remote": 5432, "host": "db.internal_net"},
        ]
    )
    assert got == [
        {"local": 8888, "remote": 8888, "host": "localhost"},
        {"local": 6006, "remote": 6006, "host": "localhost"},
        {"local": 9012, "remote": 9012, "host": "localhost"},
        {"local": 8080, "remote": 80, "host": "localhost"},
        {"local": 9000, "remote": 9001, "host": "10.0.0.5"},
        {"local": 9002, "remote": 22, "host": "fd00::1"},
        {"local": 9003, "remote": 5432, "host": "db.internal_net"},
    ]


def test_lines_bind_the_loopback_address_and_stop_when_a_port_is_taken():
    value = ["jupyter", {"local": 8080, "remote": 80, "host": "::1"}, "tensorboard"]
    assert forward_lines(value) == [
        "LocalForward 127.0.0.1:8888 localhost:8888",
        "LocalForward 127.0.0.1:8080 [::1]:80",
        "LocalForward 127.0.0.1:6006 localhost:6006",
        "ExitOnForwardFailure yes",
    ]
    assert ssh_config_forwards(["profiler"]) == [
        "LocalForward 127.0.0.1:9012 localhost:9012",
        "ExitOnForwardFailure yes",
    ]


BAD = [
    # id, value, what the message shows, what it says is allowed
    ("not-a-list", "jupyter", '"jupyter"', "not a list"),
    ("a-mapping", {"local": 1, "remote": 1}, '"local": 1', "not a list"),
    ("a-number", 8888, "8888", "not a list"),
    (
        "unknown-service",
        ["notebook"],
        '"notebook"',
        "known services: jupyter, tensorboard, profiler",
    ),
    ("service-case", ["Jupyter"], '"Jupyter"', "known services: jupyter"),
    ("service-newline", ["jupyter\n"], "jupyter", "known services"),
    ("item-number", [8888], "item 1 is 8888", "service name"),
    ("item-list", [[8888, 8888]], "[8888, 8888]", "service name"),
    ("no-remote", [{"local": 8080}], '"local": 8080', "no remote port"),
    ("no-local", [{"remote": 80}], '"remote": 80', "no local port"),
    ("unknown-key", [{"local": 1, "remote": 1, "port": 2}], '"port": 2', "unknown key(s) port"),
    ("port-zero", [{"local": 0, "remote": 80}], "local port 0", "from 1 to 65535"),
    ("port-high", [{"local": 8080, "remote": 65536}], "remote port 65536", "from 1 to 65535"),
    ("port-negative", [{"local": -1, "remote": 80}], "local port -1", "from 1 to 65535"),
    ("port-text", [{"local": "http", "remote": 80}], 'local port "http"', "whole number"),
    ("port-float", [{"local": 80.5, "remote": 80}], "local port 80.5", "whole number"),
    ("port-bool", [{"local": True, "remote": 80}], "local port true", "whole number"),
    ("port-null", [{"local": None, "remote": 80}], "local port null", "whole number"),
    ("host-space", [{"local": 1, "remote": 1, "host": "a b"}], '"a b"', "no spaces"),
    ("host-newline", [{"local": 1, "remote": 1, "host": "h\nProxyCommand x"}], "Proxy", "host"),
    ("host-empty", [{"local": 1, "remote": 1, "host": ""}], 'host ""', "host name or IP"),
    ("host-number", [{"local": 1, "remote": 1, "host": 5}], "host 5", "host name or IP"),
    ("host-dash", [{"local": 1, "remote": 1, "host": "-oProxyCommand"}], "-oProxy", "host name"),
    ("host-colon", [{"local": 1, "remote": 1, "host": "h:22"}], '"h:22"', "host name or IP"),
    ("dup-service", ["jupyter", "jupyter"], "local port 8888", "items 1 and 2"),
    ("dup-mixed", ["tensorboard", {"local": 6006, "remote": 1}], "6006", "items 1 and 2"),
]


@pytest.mark.parametrize(
    ("value", "shown", "allowed"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_forwards_are_refused_with_the_variable_the_value_and_what_is_allowed(
    value, shown, allowed
):
    message = forwards_problem(value)
    assert message.startswith(NAME), message
    assert shown in message, message
    assert allowed in message, message
    with pytest.raises(ForwardError, match="tpu_ssh_config_forwards"):
        parse_forwards(value)
    with pytest.raises(AnsibleFilterError, match="tpu_ssh_config_forwards"):
        ssh_config_forwards(value)


def test_the_message_names_the_variable_given():
    assert forwards_problem(["x"], "recorded forwards").startswith("recorded forwards item 1")


def test_the_same_remote_port_on_two_local_ports_is_fine():
    value = ["jupyter", {"local": 18888, "remote": 8888}]
    assert forwards_problem(value) == ""
    assert forward_lines(value)[1] == "LocalForward 127.0.0.1:18888 localhost:8888"
