"""Fixtures of the emulator's tests that go through the API client: the emulator in-process,
fresh for each test, whose operations finish at once (api), and a client for it (client)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.module_harness import TOKEN, Api, serve

tpu_api = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api")


@pytest.fixture
def api() -> Iterator[Api]:
    with serve(operation_delay=0.0) as emulator:
        yield emulator


@pytest.fixture
def client(api: Api) -> Any:
    return tpu_api.TpuClient.from_params(
        {"auth_kind": "accesstoken", "access_token": TOKEN}, base_url=api.url, retries=1
    )
