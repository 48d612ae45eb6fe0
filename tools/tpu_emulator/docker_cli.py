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
