"""A local emulator of the public Cloud TPU v2 REST API, for tests, benchmarks and the demo.

Run it with ``python -m tools.tpu_emulator --state FILE --port 0``; see ``--help``. In Python::

    from tools.tpu_emulator import Emulator, EmulatorServer, load_state
    with EmulatorServer(Emulator(load_state("state.yml"), operation_delay=0.1)) as server:
        ...  # point the client at server.api_url with any bearer token
"""

from __future__ import annotations

from .backends import Backend, InMemoryBackend, NodeInfo, WorkerAddress
from .model import Emulator
from .server import EmulatorServer
from .state import load_backend, load_state

__all__ = [
    "Backend",
    "Emulator",
    "EmulatorServer",
    "InMemoryBackend",
    "NodeInfo",
    "WorkerAddress",
    "load_backend",
    "load_state",
]
