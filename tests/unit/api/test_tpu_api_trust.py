"""What the TPU API client trusts, where it sends its bearer token: https, or plain http to a
loopback address, or to a host named in http_hosts / CLOUDTPU_API_HTTP_HOSTS
(tpu_api_options.base_url_problem), in the client, the TPU modules and the inventory plugin.
What it accepts as an answer is test_tpu_api_answers.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuApiError,
    TpuClient,
    base_url_problem,
    http_hosts_problem,
    parse_http_hosts,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_checks import (
    config_problems,
)

from tests.module_harness import (
    TOKEN,
    ZONE,
    inventory_source,
    parse_inventory,
    run_module,
    serve,
    state,
)
from tools.tpu_emulator.testing import node

NAME = "base_url (env CLOUDTPU_API_ENDPOINT)"

URL_REFUSED = [
    ("http://10.0.0.5:8470/v2", "plain http to 10.0.0.5, not a loopback address"),
    ("http://host.docker.internal:8470/v2", "plain http to host.docker.internal"),
    ("http://tpu.googleapis.com/v2", "would send the access token over the network unencrypted"),
    ("http://0.0.0.0:8470/v2", "plain http to 0.0.0.0"),
    ("http://127.1:8470/v2", "plain http to 127.1"),
    ("http://localhost.example.com/v2", "plain http to localhost.example.com"),
    ("http://[fe80::1]:8470/v2", "plain http to fe80::1"),
    ("http://evil.example\\@127.0.0.1/v2", "a space, a backslash or a control character"),
    ("http://127.0.0.1:8470/v2\n", "a space, a backslash or a control character"),
    ("http://127.0.0.1:0/v2", "is not a host name or address and a port"),
    ("http://[::1/v2", "not a URL"),
    ("tpu.googleapis.com/v2", "not an http(s) URL"),
    ("ftp://127.0.0.1/v2", "not an http(s) URL"),
    ("https:///v2", "not an http(s) URL"),
]
URL_ACCEPTED = [
    "https://tpu.googleapis.com/v2",
    "https://10.0.0.5:8443/v2",
    "https://[2001:db8::1]/v2",
    "http://127.0.0.1:8470/v2",
    "http://127.42.0.9/v2",
    "http://[::1]:8470/v2",
    "http://localhost:8470/v2",
    "HTTP://LOCALHOST:8470/v2",
]


@pytest.mark.parametrize(("url", "reason"), URL_REFUSED, ids=[u for u, _ in URL_REFUSED])
def test_the_token_goes_nowhere_else(url: str, reason: str) -> None:
    with pytest.raises(TpuApiError) as caught:
        TpuClient(None, base_url=url, session=object())
    message = str(caught.value)
    assert caught.value.reason == "BAD_BASE_URL"
    assert message.startswith(f"{NAME} is "), message
    assert reason in message, message
    assert "allowed: an https:// URL of the API root" in message, message
    if "plain http to" in reason:
        # the opt-in is named, with what it allows now
        assert (
            "or to a host named in http_hosts (env CLOUDTPU_API_HTTP_HOSTS) (now none)" in message
        )
        assert message.endswith(" in http_hosts (env CLOUDTPU_API_HTTP_HOSTS)."), message


@pytest.mark.parametrize("url", URL_ACCEPTED)
def test_https_and_loopback_http_are_used(url: str) -> None:
    assert base_url_problem(url) == ""
    assert TpuClient(None, base_url=url, session=object()).base_url == url


def test_a_password_in_the_url_is_refused_without_showing_it() -> None:
    message = base_url_problem("https://me:s3cret@tpu.example/v2")
    assert "user name or password (not shown)" in message and "s3cret" not in message
    assert '"https://***@tpu.example/v2"' in message


def test_the_environment_variable_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDTPU_API_ENDPOINT", "http://192.0.2.7:8470/v2")
    with pytest.raises(TpuApiError, match=r"CLOUDTPU_API_ENDPOINT\) is \"http://192\.0\.2\.7"):
        TpuClient.from_params({"auth_kind": "accesstoken", "access_token": TOKEN})


def test_a_module_refuses_plain_http_before_any_call() -> None:
    with serve() as api:
        outcome = run_module(
            "tpu_node_info", api.auth(zones=[ZONE], base_url="http://192.0.2.7:8470/v2")
        )
        assert api.calls() == {}
    assert outcome.failed and outcome["reason"] == "BAD_BASE_URL", outcome.result
    assert outcome.msg.startswith(f'{NAME} is "http://192.0.2.7:8470/v2": plain http'), outcome.msg


# -- plain http to a host named by the user (http_hosts, CLOUDTPU_API_HTTP_HOSTS) --------------

DOCKER_HOST = "http://host.docker.internal:8470/v2"
HOSTS_NAME = "http_hosts (env CLOUDTPU_API_HTTP_HOSTS)"
# the URL, the hosts named, then whether the client may send its token there
NAMED_HOSTS = [
    (DOCKER_HOST, ["host.docker.internal"], True),
    (DOCKER_HOST, "host.docker.internal", True),
    (DOCKER_HOST, "10.0.0.5, host.docker.internal", True),
    (DOCKER_HOST, ["HOST.Docker.Internal"], True),
    ("http://10.0.0.5:8470/v2", ["10.0.0.5"], True),
    ("http://[fd00::5]:8470/v2", ["fd00:0::5"], True),
    # an empty variable (Ansible makes [""] of it for a list option) names none
    ("http://127.0.0.1:8470/v2", [""], True),
    ("https://tpu.example/v2", [], True),
    (DOCKER_HOST, ["10.0.0.5"], False),
    (DOCKER_HOST, ["docker.internal"], False),
    (DOCKER_HOST, ["host.docker.internal.evil.example"], False),
    ("http://host.docker.internal.evil.example/v2", ["host.docker.internal"], False),
    ("http://10.0.0.6/v2", ["10.0.0.5"], False),
    (DOCKER_HOST, [], False),
    (DOCKER_HOST, "", False),
    (DOCKER_HOST, None, False),
    (DOCKER_HOST, [""], False),
]


@pytest.mark.parametrize(
    ("url", "hosts", "allowed"), NAMED_HOSTS, ids=[f"{u}-{h!r}" for u, h, _ in NAMED_HOSTS]
)
def test_plain_http_goes_only_to_the_hosts_named(url: str, hosts: Any, allowed: bool) -> None:
    message = base_url_problem(url, http_hosts=hosts)
    if allowed:
        assert message == ""
        assert TpuClient(None, base_url=url, http_hosts=hosts, session=object()).base_url == url
        return
    host = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    assert message.startswith(f'{NAME} is "{url}": plain http to {host}, not a loopback'), message
    named = ", ".join(parse_http_hosts(hosts)[0]) or "none"
    assert f"or to a host named in {HOSTS_NAME} (now {named})" in message, message
    assert f"To allow it on a network you trust, name {host} in {HOSTS_NAME}." in message
    with pytest.raises(TpuApiError) as caught:
        TpuClient(None, base_url=url, http_hosts=hosts, session=object())
    assert caught.value.reason == "BAD_BASE_URL" and str(caught.value) == message


# the value of http_hosts, then what the message says of it
HOSTS_REFUSED = [
    ("*", '"*" is a pattern; name each host'),
    (["*"], '"*" is a pattern; name each host'),
    ("*.docker.internal", '"*.docker.internal" is a pattern'),
    ("host.docker.?nternal", "is a pattern"),
    ("host.docker.internal,", "an entry is empty"),
    (",host.docker.internal", "an entry is empty"),
    ("a,,b", "an entry is empty"),
    (["host.docker.internal", ""], "an entry is empty"),
    (" ", "an entry is empty"),
    (
        "http://host.docker.internal:8470/v2",
        "is a URL or an address range, not a host; write each host alone",
    ),
    (["http://host.docker.internal"], "is a URL or an address range"),
    ("host.docker.internal/v2", "is a URL or an address range"),
    ("me@host.docker.internal", "is a URL or an address range"),
    ("host.docker.internal:8470", "has a port or brackets; write the host alone"),
    ("[fd00::5]", "has a port or brackets"),
    ("host.docker.internal\n", "is not a host name or address"),
    ("host docker", "is not a host name or address"),
    ("host.docker.internal.", "is not a host name or address"),
    (".docker.internal", "is not a host name or address"),
    ("-x.example", "is not a host name or address"),
    ("a" * 300, "is not a host name or address"),
    ("ex\u202eample", "is not a host name or address"),
    ({"host.docker.internal": True}, "not a list of host names"),
    (["host.docker.internal", 5], "not a list of host names"),
    (True, "not a list of host names"),
]


@pytest.mark.parametrize(
    ("hosts", "reason"), HOSTS_REFUSED, ids=[repr(h)[:40] for h, _ in HOSTS_REFUSED]
)
def test_hostile_host_lists_are_refused_by_name(hosts: Any, reason: str) -> None:
    message = http_hosts_problem(hosts)
    assert message.startswith(f"{HOSTS_NAME} is "), message
    assert reason in message, message
    assert "allowed: a list (or a comma-separated string) of host names or addresses" in message
    assert "empty (the default) allows none." in message
    # the list is the problem, whatever the URL; nothing is allowed by a refused list
    assert base_url_problem(DOCKER_HOST, http_hosts=hosts) == message
    assert base_url_problem("https://tpu.googleapis.com/v2", http_hosts=hosts) == message
    with pytest.raises(TpuApiError) as caught:
        TpuClient(None, base_url=DOCKER_HOST, http_hosts=hosts, session=object())
    assert caught.value.reason == "BAD_HTTP_HOSTS" and str(caught.value) == message


def test_the_pull_variable_is_the_name_in_the_messages() -> None:
    message = base_url_problem(
        DOCKER_HOST, "tpu_provision_pull_api_endpoint", ["10.0.0.5"], "tpu_x_http_hosts"
    )
    assert message.startswith('tpu_provision_pull_api_endpoint is "http://host.docker'), message
    assert (
        "(now 10.0.0.5)" in message and "name host.docker.internal in tpu_x_http_hosts." in message
    )
    assert http_hosts_problem("*", "tpu_x_http_hosts").startswith('tpu_x_http_hosts is "*": ')


def test_the_environment_variable_names_the_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    params = {"auth_kind": "accesstoken", "access_token": TOKEN}
    monkeypatch.setenv("CLOUDTPU_API_ENDPOINT", DOCKER_HOST)
    with pytest.raises(TpuApiError, match=r"\(now none\)"):
        TpuClient.from_params(params, session=object())
    monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "10.0.0.5,host.docker.internal")
    assert TpuClient.from_params(params, session=object()).base_url == DOCKER_HOST
    # an option given wins over the environment
    with pytest.raises(TpuApiError, match=r"\(now 10\.0\.0\.5\)"):
        TpuClient.from_params({**params, "http_hosts": ["10.0.0.5"]}, session=object())
    monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "*")
    with pytest.raises(TpuApiError, match=r'^http_hosts \(env CLOUDTPU_API_HTTP_HOSTS\) is "\*"'):
        TpuClient.from_params(params, session=object())


def test_a_module_takes_the_hosts_from_its_option_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Linux connects 0.0.0.0 to this machine, but it is no loopback address: the module reaches
    # the emulator through it only when 0.0.0.0 is named.
    with serve(state()) as api:
        url = api.url.replace("127.0.0.1", "0.0.0.0")
        refused = run_module("tpu_node_info", api.auth(zones=[ZONE], base_url=url))
        assert refused.failed and refused["reason"] == "BAD_BASE_URL", refused.result
        assert f"(now none). To allow it on a network you trust, name 0.0.0.0 in {HOSTS_NAME}." in (
            refused.msg
        )
        assert api.calls() == {}
        named = run_module(
            "tpu_node_info", api.auth(zones=[ZONE], base_url=url, http_hosts=["0.0.0.0"])
        )
        assert not named.failed, named.result
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0")
        from_env = run_module("tpu_node_info", api.auth(zones=[ZONE], base_url=url))
        assert not from_env.failed, from_env.result
        assert api.calls() == {"GET nodes.list": 2}
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0/8")
        hostile = run_module("tpu_node_info", api.auth(zones=[ZONE], base_url=url))
    assert hostile.failed and hostile["reason"] == "BAD_HTTP_HOSTS", hostile.result
    assert hostile.msg.startswith(
        f'{HOSTS_NAME} is ["0.0.0.0/8"]: "0.0.0.0/8" is a URL or an address range'
    ), hostile.msg


def test_the_inventory_refuses_plain_http(tmp_path: Path) -> None:
    path = inventory_source(tmp_path, "http://host.docker.internal:8470/v2")
    with pytest.raises(AnsibleError, match=r"base_url \(env CLOUDTPU_API_ENDPOINT\) is \"http://"):
        parse_inventory(path)


def test_the_inventory_uses_plain_http_to_the_hosts_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.0.0.0 reaches this machine on Linux without being a loopback address (see above)
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        url = api.url.replace("127.0.0.1", "0.0.0.0")
        with pytest.raises(AnsibleError, match=r"name 0\.0\.0\.0 in http_hosts"):
            parse_inventory(inventory_source(tmp_path, url))
        named = parse_inventory(inventory_source(tmp_path, url, http_hosts=["0.0.0.0"]))
        assert "pod-a-w0" in named.hosts
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0")
        assert "pod-a-w1" in parse_inventory(inventory_source(tmp_path, url)).hosts
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "")
        with pytest.raises(AnsibleError, match=r"\(now none\)"):
            parse_inventory(inventory_source(tmp_path, url))
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0,*")
        with pytest.raises(AnsibleError, match=r'is \["0\.0\.0\.0", "\*"\]: "\*" is a pattern'):
            parse_inventory(inventory_source(tmp_path, url))
        assert list(api.calls()) == ["GET nodes.list"]


def test_the_inventory_source_names_a_bad_host_list_before_any_call(tmp_path: Path) -> None:
    problems = config_problems(
        {"plugin": "cloudtpu.pod.tpu_vm", "http_hosts": ["*"]}, ["http_hosts"]
    )
    assert problems and problems[0].startswith(f'{HOSTS_NAME} is ["*"]: "*" is a pattern')
    with serve(state()) as api:
        with pytest.raises(AnsibleError, match=r'trust\.tpu_vm\.yml: http_hosts .* is \["\*"\]'):
            parse_inventory(inventory_source(tmp_path, api.url, http_hosts=["*"]))
        assert api.calls() == {}
