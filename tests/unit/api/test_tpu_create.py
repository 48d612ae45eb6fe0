"""A create whose answer is lost or is a 500 (plugins/module_utils/tpu_create.py and the
transport's ``once``): looked up before it is sent again; a 409 returns the node that exists.
Against the in-process emulator, with a session wrapper that loses answers on purpose."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_create import create_or_find

from tests.unit.api.tpu_api_server import PROJECT, Recorder, client_for
from tools.tpu_emulator.testing import admin

ZONE = "us-central2-b"
BODY = {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"}


class _Losing:
    """Wraps the client's session: the first create is lost on its way back (``after``, the
    emulator carried it out), on its way there (``before``, nothing happened), or answered 500
    after it was carried out (``500``)."""

    def __init__(self, inner: Any, how: str) -> None:
        self.inner = inner
        self.how = how
        self.creates = 0

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        if method == "POST" and url.endswith("/nodes"):
            self.creates += 1
            if self.creates == 1 and self.how == "before":
                raise requests.exceptions.ConnectionError("lost on the way")
            answer = self.inner.request(method, url, **kwargs)
            if self.creates == 1 and self.how == "after":
                raise requests.exceptions.ReadTimeout("lost on the way back")
            if self.creates == 1 and self.how == "500":
                answer.status_code = 500
                answer._content = b'{"error": {"code": 500, "status": "INTERNAL", "message": "x"}}'
            return answer
        return self.inner.request(method, url, **kwargs)


def losing(server: Any, how: str) -> tuple[TpuClient, _Losing]:
    client = client_for(server, Recorder())
    wrapper = _Losing(client._http, how)
    client._http = wrapper
    return client, wrapper


def routes(server: Any) -> dict[str, int]:
    return admin(server.root_url, "GET", "stats")["by_route"]


def test_a_create_without_an_answer_is_not_sent_again_by_the_transport(server: Any) -> None:
    client, wrapper = losing(server, "after")
    with pytest.raises(TpuApiError, match="may have been carried out") as info:
        client.create_node(PROJECT, ZONE, "new-node", BODY)
    assert info.value.reason == "OUTCOME_UNKNOWN"
    assert wrapper.creates == 1 and client.request_count == 1


def test_a_read_timeout_after_the_node_was_made_finds_it(server: Any) -> None:
    client, wrapper = losing(server, "after")
    operation, node, ours = create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert operation is None and ours is True
    assert node is not None and node["acceleratorType"] == "v4-8"
    assert wrapper.creates == 1
    assert routes(server).get("GET nodes.get") == 1


def test_a_create_lost_on_its_way_is_sent_again_after_a_look(server: Any) -> None:
    client, wrapper = losing(server, "before")
    operation, node, _ = create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert node is None and operation is not None and operation["metadata"]["verb"] == "create"
    assert wrapper.creates == 2
    assert routes(server).get("GET nodes.get") == 1


def test_a_500_after_the_node_was_made_finds_it(server: Any) -> None:
    client, wrapper = losing(server, "500")
    operation, node, ours = create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert operation is None and node is not None and ours is True
    assert wrapper.creates == 1


def test_a_500_that_made_nothing_is_looked_at_then_sent_again(server: Any) -> None:
    rule = {"path": "*/nodes", "method": "POST", "statuses": [500]}
    admin(server.root_url, "POST", "faults", {"rules": [rule]})
    client = client_for(server, Recorder())
    operation, node, _ = create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert node is None and operation is not None
    calls = routes(server)
    assert calls.get("POST nodes.create") == 2 and calls.get("GET nodes.get") == 1, calls


def test_500s_until_the_attempts_run_out_raise_the_last(server: Any) -> None:
    rule = {"path": "*/nodes", "method": "POST", "error": 500}
    admin(server.root_url, "POST", "faults", {"rules": [rule]})
    client = client_for(server, Recorder(), retries=3)
    with pytest.raises(TpuApiError) as info:
        create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert info.value.status == 500
    calls = routes(server)
    assert calls.get("POST nodes.create") == 3 and calls.get("GET nodes.get") == 3, calls


def test_a_409_returns_the_node_that_exists_not_ours(server: Any) -> None:
    client = client_for(server, Recorder())
    operation, node, ours = create_or_find(client, PROJECT, ZONE, "pod-a", BODY)
    assert operation is None and ours is False
    assert node is not None and node["acceleratorType"] == "v4-32"


def test_a_403_is_raised_without_a_look(server: Any) -> None:
    rule = {"path": "*/nodes", "method": "POST", "error": "PERMISSION_DENIED", "times": 1}
    admin(server.root_url, "POST", "faults", {"rules": [rule]})
    client = client_for(server, Recorder())
    with pytest.raises(TpuApiError) as info:
        create_or_find(client, PROJECT, ZONE, "new-node", BODY)
    assert info.value.status == 403
    assert "GET nodes.get" not in routes(server)
