"""What the Docker backend leaves behind, listed or removed: the containers and networks labelled
``cloudtpu.emulator=<emulator id>`` (``docker_cli.LABEL``).

The emulator removes its own when it shuts down (unless CLOUDTPU_EMULATOR_KEEP=1); for the rest,
the command line::

    python -m tools.tpu_emulator.docker_backend list|cleanup [--id EMULATOR_ID]

(``docker_backend.py`` runs :func:`main`; tests, the Makefile and tools/ call it by that name.)
"""

from __future__ import annotations

import argparse
import json
import sys

from . import docker_cli
from .docker_cli import LABEL, DockerError


def leftovers(emulator_id: str | None = None) -> dict[str, list[str]]:
    """Containers and networks labelled by an emulator (``None``: by any emulator)."""
    label = f"label={LABEL}={emulator_id}" if emulator_id else f"label={LABEL}"
    containers = docker_cli.call("ps", "-a", "--format", "{{.Names}}", "--filter", label).split()
    networks = docker_cli.call("network", "ls", "--format", "{{.Name}}", "--filter", label).split()
    return {"containers": sorted(containers), "networks": sorted(networks)}


def cleanup(emulator_id: str | None = None) -> dict[str, list[str]]:
    """Remove the containers and networks of an emulator (``None``: of every emulator)."""
    found = leftovers(emulator_id)
    if found["containers"]:
        docker_cli.call("rm", "-f", "-v", *found["containers"], timeout=180)
    for network in found["networks"]:
        docker_cli.call("network", "rm", network, check=False)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.tpu_emulator.docker_backend",
        description="List or remove the containers and networks of the emulator's Docker backend.",
    )
    parser.add_argument("action", choices=["list", "cleanup"])
    parser.add_argument("--id", help="only those of this emulator id (default: every emulator)")
    args = parser.parse_args(argv)
    try:
        found = cleanup(args.id) if args.action == "cleanup" else leftovers(args.id)
    except DockerError as exc:
        print(f"docker backend: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(found, indent=2))
    return 0
