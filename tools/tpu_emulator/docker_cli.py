"""The docker command line, the one way the Docker backend speaks to Docker (no Python dependency
beyond the standard library), and the labels that mark what the emulator creates there.

Every docker command of the backend goes through :func:`call`, looked up on this module (call
``docker_cli.call``, not a copy of it), so that a test can stand in for Docker in one place.
"""

from __future__ import annotations

import subprocess

# Every container and network the emulator creates carries LABEL=<emulator id>; its containers
# also NODE_LABEL=<project/zone/node> and WORKER_LABEL=<worker index>.
LABEL = "cloudtpu.emulator"
NODE_LABEL = "cloudtpu.node"
WORKER_LABEL = "cloudtpu.worker"


class DockerError(OSError):
    """A docker command failed; the message holds the command and its output."""


def call(*args: str, timeout: float = 120.0, check: bool = True) -> str:
    """``docker ARGS``; its standard output. Raises DockerError when it fails (with ``check``),
    takes longer than ``timeout`` seconds, or docker is not installed."""
    command = ["docker", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise DockerError(
            "the docker command is not installed; run tools/ensure-docker.sh (make docker)"
        ) from None
    except subprocess.TimeoutExpired:
        raise DockerError(f"{' '.join(command)} took more than {timeout:.0f} s") from None
    if check and done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise DockerError(f"{' '.join(command)} failed ({done.returncode}): {output}")
    return done.stdout


def gateway(network: str) -> str:
    """The IPv4 gateway of a Docker network ('' when it has none): the one its IPAM names, or
    else the first address of its subnet, which is what Docker gives the bridge when none is
    named (the default ``bridge`` of some Docker releases names none)."""
    import ipaddress
    import json

    out = call("network", "inspect", "--format", "{{json .IPAM.Config}}", network)
    configs = json.loads(out or "null") or []
    for config in configs:
        named = str(config.get("Gateway") or "")
        if "." in named:
            return named
    for config in configs:
        try:
            subnet = ipaddress.ip_network(str(config.get("Subnet") or ""), strict=False)
        except ValueError:
            continue
        if subnet.version == 4 and subnet.num_addresses > 2:
            return str(subnet.network_address + 1)
    return ""


if __name__ == "__main__":
    # python -m tools.tpu_emulator.docker_cli gateway NETWORK: print that network's gateway
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "gateway":
        sys.exit("usage: python -m tools.tpu_emulator.docker_cli gateway NETWORK")
    try:
        print(gateway(sys.argv[2]))
    except (DockerError, ValueError) as exc:
        sys.exit(str(exc))
