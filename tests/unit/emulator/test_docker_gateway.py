"""docker_cli.gateway: a Docker network's IPv4 gateway, named by its IPAM or else Docker's own
choice (the first address of the subnet), as the default bridge of Debian's docker.io 20.10
shows it (a subnet and no gateway)."""

from __future__ import annotations

import json

import pytest

from tools.tpu_emulator import docker_cli


@pytest.mark.parametrize(
    ("configs", "expected"),
    [
        ([{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}], "172.18.0.1"),
        ([{"Subnet": "172.17.0.0/16"}], "172.17.0.1"),
        ([{"Subnet": "10.9.8.0/24", "Gateway": ""}], "10.9.8.1"),
        (
            [{"Subnet": "fd00::/64", "Gateway": "fd00::1"}, {"Subnet": "172.19.0.0/16"}],
            "172.19.0.1",
        ),
        ([{"Subnet": "fd00::/64"}], ""),
        ([{"Subnet": "10.0.0.0/31"}], ""),
        ([{"Subnet": "not a subnet"}], ""),
        (None, ""),
        ([], ""),
    ],
)
def test_gateway(monkeypatch: pytest.MonkeyPatch, configs: object, expected: str) -> None:
    calls = []

    def call(*args: str, **_: object) -> str:
        calls.append(args)
        return json.dumps(configs) + "\n"

    monkeypatch.setattr(docker_cli, "call", call)
    assert docker_cli.gateway("bridge") == expected
    assert calls == [("network", "inspect", "--format", "{{json .IPAM.Config}}", "bridge")]
