"""Fixtures of the API client's and the modules' tests, fresh for each test: the emulator
in-process with tpu_api_server.py's state and a client for it whose sleeps are recorded
(server, sleeps, client), and the emulator as tests/module_harness.py serves it (api)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuClient

from tests.module_harness import Api
from tests.module_harness import serve as serve_api
from tests.unit.api.tpu_api_server import Recorder, client_for, state
from tools.tpu_emulator.testing import serve


@pytest.fixture
def server() -> Iterator[Any]:
    with serve(state()) as srv:
        yield srv


@pytest.fixture
def sleeps() -> Recorder:
    return Recorder()


@pytest.fixture
def client(server: Any, sleeps: Recorder) -> TpuClient:
    return client_for(server, sleeps)


@pytest.fixture
def api() -> Iterator[Api]:
    with serve_api() as emulator:
        yield emulator
