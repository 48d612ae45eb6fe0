"""What the TPU API client trusts: where it sends its bearer token (https, or plain http to a
loopback address, or to a host named in http_hosts / CLOUDTPU_API_HTTP_HOSTS:
tpu_api_options.base_url_problem) and what it accepts as an answer (the API's shapes,
tpu_api_shapes.answer_problem, checked once in the transport for every call).

Bad answers are made with the emulator (tests/module_harness.py serve, tools/tpu_emulator
serve) by rewriting what it sends; each must end in a message that names the call and the field,
never a Python traceback, in the client, the three TPU modules and the inventory plugin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuApiError,
    TpuClient,
    base_url_problem,
    http_hosts_problem,
    parse_http_hosts,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_shapes import answer_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_checks import (
    config_problems,
)

from tests.module_harness import PROJECT, TOKEN, ZONE, run_module, serve, state
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


def _source(tmp_path: Path, base_url: str, **extra: Any) -> Path:
    config = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": [PROJECT],
        "base_url": base_url,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        "retries": 1,
        **extra,
    }
    path = tmp_path / "trust.tpu_vm.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _parse(path: Path) -> InventoryData:
    data = InventoryData()
    inventory_loader.get("cloudtpu.pod.tpu_vm").parse(data, DataLoader(), str(path), cache=False)
    return data


def test_the_inventory_refuses_plain_http(tmp_path: Path) -> None:
    path = _source(tmp_path, "http://host.docker.internal:8470/v2")
    with pytest.raises(AnsibleError, match=r"base_url \(env CLOUDTPU_API_ENDPOINT\) is \"http://"):
        _parse(path)


def test_the_inventory_uses_plain_http_to_the_hosts_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.0.0.0 reaches this machine on Linux without being a loopback address (see above)
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        url = api.url.replace("127.0.0.1", "0.0.0.0")
        with pytest.raises(AnsibleError, match=r"name 0\.0\.0\.0 in http_hosts"):
            _parse(_source(tmp_path, url))
        named = _parse(_source(tmp_path, url, http_hosts=["0.0.0.0"]))
        assert "pod-a-w0" in named.hosts
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0")
        assert "pod-a-w1" in _parse(_source(tmp_path, url)).hosts
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "")
        with pytest.raises(AnsibleError, match=r"\(now none\)"):
            _parse(_source(tmp_path, url))
        monkeypatch.setenv("CLOUDTPU_API_HTTP_HOSTS", "0.0.0.0,*")
        with pytest.raises(AnsibleError, match=r'is \["0\.0\.0\.0", "\*"\]: "\*" is a pattern'):
            _parse(_source(tmp_path, url))
        assert list(api.calls()) == ["GET nodes.list"]


def test_the_inventory_source_names_a_bad_host_list_before_any_call(tmp_path: Path) -> None:
    problems = config_problems(
        {"plugin": "cloudtpu.pod.tpu_vm", "http_hosts": ["*"]}, ["http_hosts"]
    )
    assert problems and problems[0].startswith(f'{HOSTS_NAME} is ["*"]: "*" is a pattern')
    with serve(state()) as api:
        with pytest.raises(AnsibleError, match=r'trust\.tpu_vm\.yml: http_hosts .* is \["\*"\]'):
            _parse(_source(tmp_path, api.url, http_hosts=["*"]))
        assert api.calls() == {}


# -- answers --------------------------------------------------------------------------------------

# permission of the call, the answer, where the message says it is wrong
SHAPES_REFUSED = [
    ("tpu.nodes.list", {"nodes": ["pod-a"]}, 'nodes[0] is a string ("pod-a"), not an object'),
    ("tpu.nodes.list", {"nodes": {"name": "x"}}, "nodes is an object"),
    ("tpu.nodes.list", {"nodes": [], "nextPageToken": 7}, "nextPageToken is a number (7), not a"),
    ("tpu.nodes.list", {"unreachable": "us-east1-d"}, "unreachable is a string"),
    ("tpu.nodes.get", [{"name": "x"}], 'the answer is a list ([{"name": "x"}]), not an object'),
    ("tpu.nodes.get", "READY", 'the answer is a string ("READY")'),
    ("tpu.nodes.get", {"networkEndpoints": ["10.0.0.2"]}, "networkEndpoints[0] is a string"),
    ("tpu.nodes.get", {"networkEndpoints": [{"accessConfig": []}]}, "accessConfig is a list"),
    ("tpu.nodes.get", {"labels": {"team": ["a"]}}, "labels.team is a list"),
    ("tpu.nodes.get", {"labels": ["team"]}, "labels is a list"),
    ("tpu.nodes.get", {"schedulingConfig": {"spot": "false"}}, "spot is a string"),
    ("tpu.nodes.get", {"state": {"state": "READY"}}, "state is an object"),
    ("tpu.nodes.get", {"acceleratorConfig": "v4"}, "acceleratorConfig is a string"),
    ("tpu.nodes.get", {"networkEndpoints": [{"port": "x8470"}]}, "port is a string"),
    ("tpu.nodes.create", {"name": "op", "done": "yes"}, 'done is a string ("yes"), not a boolean'),
    ("tpu.operations.get", {"error": ["boom"]}, "error is a list"),
    ("tpu.operations.get", {"metadata": {"target": 5}}, "metadata.target is a number"),
    ("tpu.queuedResources.get", {"tpu": {"nodeSpec": ["x"]}}, "tpu.nodeSpec[0] is a string"),
    (
        "tpu.queuedResources.get",
        {"tpu": {"nodeSpec": [{"multisliceParams": {"nodeCount": "two"}}]}},
        "tpu.nodeSpec[0].multisliceParams.nodeCount is a string",
    ),
    ("tpu.queuedResources.list", {"queuedResources": [[]]}, "queuedResources[0] is a list"),
    ("tpu.locations.list", {"locations": [{"locationId": ["z"]}]}, "locationId is a list"),
    ("tpu.nodes.list", {"nodes": ["a" * 200]}, '("aaaaaaaaaaaaaaaaaaaa'),
]
SHAPES_ACCEPTED = [
    ("tpu.nodes.get", {"state": "READY", "extraField": [1, {"x": None}], "id": "123"}),
    ("tpu.nodes.get", {"networkEndpoints": None, "labels": None, "id": 4}),
    ("tpu.nodes.list", {}),
    ("tpu.operations.get", {"name": "op", "done": True, "response": {"@type": "x"}}),
    ("tpu.something.new", {"anything": ["goes"]}),
]


@pytest.mark.parametrize(
    ("permission", "data", "where"), SHAPES_REFUSED, ids=[w[:40] for _, _, w in SHAPES_REFUSED]
)
def test_answers_of_another_shape_are_named(permission: str, data: Any, where: str) -> None:
    assert where in answer_problem(data, permission)


@pytest.mark.parametrize(("permission", "data"), SHAPES_ACCEPTED)
def test_answers_of_the_api_shape_pass(permission: str, data: Any) -> None:
    assert answer_problem(data, permission) == ""


def rewrite(api: Any, path_part: str, change: Callable[[Any], Any]) -> None:
    """Have the emulator send ``change(answer)`` instead of its answer, for paths with
    ``path_part`` (what a proxy that rewrites answers, or another service, would do)."""
    real = api.emulator.dispatch

    def dispatch(method: str, path: str, *args: Any) -> tuple[int, Any]:
        status, payload = real(method, path, *args)
        if path_part in path and status == 200:
            payload = change(payload)
        return status, payload

    api.emulator.dispatch = dispatch


def _each_node(change: Callable[[dict], dict]) -> Callable[[Any], Any]:
    """Change a node answer, or every node of a list answer."""

    def apply(payload: Any) -> Any:
        if "nodes" in payload:
            return {**payload, "nodes": [change(n) for n in payload["nodes"]]}
        return change(payload) if "acceleratorType" in payload else payload

    return apply


NODE_LIST_STRING = (lambda p: {**p, "nodes": ["pod-a"]} if "nodes" in p else p, "nodes[0] is a")
ARRAY = (lambda p: [p], "the answer is a list")
ENDPOINT_STRING = (
    _each_node(lambda n: {**n, "networkEndpoints": ["10.0.0.2"]}),
    "networkEndpoints[0] is a string",
)
SCHEDULING_LIST = (_each_node(lambda n: {**n, "schedulingConfig": ["spot"]}), "is a list")
NETWORK_LIST = (_each_node(lambda n: {**n, "networkConfig": [1]}), "networkConfig is a list")
BAD_NODES = [NODE_LIST_STRING, ARRAY, ENDPOINT_STRING, SCHEDULING_LIST, NETWORK_LIST]
CREATE = {"accelerator_type": "v4-16", "runtime_version": "tpu-ubuntu2204-base"}
INFO = ("tpu_node_info", {"zones": [ZONE]}, "nodes.list")
NODE = ("tpu_node", {"name": "pod-a", "zone": ZONE, **CREATE}, "nodes.get")
GONE = ("tpu_node", {"name": "pod-a", "zone": ZONE, "state": "absent"}, "nodes.get")
MODULE_CASES = [
    (*module, *bad)
    for module in (INFO, NODE, GONE)
    for bad in BAD_NODES
    if not (module[2] == "nodes.get" and bad is NODE_LIST_STRING)
]


@pytest.mark.parametrize(
    ("module", "args", "call", "change", "where"),
    MODULE_CASES,
    ids=[f"{m}-{a.get('state', 'present')}-{w}" for m, a, _, _, w in MODULE_CASES],
)
def test_modules_fail_with_the_call_and_the_field(
    module: str, args: dict, call: str, change: Callable, where: str
) -> None:
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        rewrite(api, "/nodes", change)
        outcome = run_module(module, api.auth(**args))
        assert api.mutating_calls() == {}, "nothing is changed after a bad answer"
    assert outcome.failed and outcome["reason"] == "BAD_RESPONSE", outcome.result
    assert f"The TPU API's answer to {call} (GET http://127.0.0.1:" in outcome.msg, outcome.msg
    assert where in outcome.msg and "Check that base_url" in outcome.msg, outcome.msg


def test_a_queued_resource_of_another_shape_is_named() -> None:
    def change(payload: Any) -> Any:
        return {**payload, "state": "ACTIVE"} if "tpu" in payload else payload

    with serve(state()) as api:
        body = {"name": "qr-a", "zone": ZONE, **CREATE, "wait": False}
        assert not run_module("tpu_queued_resource", api.auth(**body)).failed
        rewrite(api, "/queuedResources/", change)
        outcome = run_module("tpu_queued_resource", api.auth(**body))
    assert outcome.failed and "answer to queuedResources.get" in outcome.msg, outcome.result
    assert 'state is a string ("ACTIVE"), not an object' in outcome.msg, outcome.msg


@pytest.mark.parametrize(("change", "where"), BAD_NODES, ids=[w for _, w in BAD_NODES])
def test_the_inventory_fails_with_the_call_and_the_field(
    tmp_path: Path, change: Callable, where: str
) -> None:
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        rewrite(api, "/nodes", change)
        with pytest.raises(AnsibleError) as caught:
            _parse(_source(tmp_path, api.url))
    message = str(caught.value)
    assert "The TPU API's answer to nodes.list" in message and where in message, message


class _Deep:
    """A session whose one answer is JSON nested deeper than Python's json decodes."""

    def __init__(self) -> None:
        self.status_code = 200
        self.headers: dict[str, str] = {}
        self.content = b"[" * 100000 + b"]" * 100000

    def request(self, *args: Any, **kwargs: Any) -> _Deep:
        return self

    def json(self) -> Any:
        return json.loads(self.content)


def test_an_answer_nested_too_deep_is_not_json() -> None:
    client = TpuClient(None, base_url="http://127.0.0.1:9/v2", session=_Deep())
    with pytest.raises(TpuApiError, match="not JSON") as caught:
        client.get_node("p", "z", "n")
    assert caught.value.reason == "BAD_RESPONSE"
