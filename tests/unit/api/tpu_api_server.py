"""The TPU API emulator's state and a client for it, for the unit tests of
plugins/module_utils/tpu_api.py (test_tpu_api.py, test_tpu_api_errors.py, test_tpu_create.py)."""

from __future__ import annotations

import time
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuClient

from tools.tpu_emulator.testing import TOKEN, admin, node

PROJECT = "demo-project"


def state() -> dict[str, Any]:
    return {
        "projects": {
            PROJECT: {
                "zones": {
                    "us-central2-b": {
                        "nodes": [
                            node("pod-a", "v4-32"),
                            node("pod-b", "v4-8"),
                            node("pod-c", "v4-16", state="STOPPED"),
                        ]
                    },
                    "us-east1-d": {"nodes": [node("trill", "v6e-8"), node("solo", "v6e-1")]},
                    "europe-west4-a": {},
                }
            },
            "locked-project": {"api_enabled": False, "zones": {"us-east1-d": {}}},
            "viewer-less": {"denied_permissions": ["tpu.nodes.list"], "zones": {"us-east1-d": {}}},
        }
    }


class Recorder:
    """Stands in for time.sleep: remembers the delays, waits only a moment."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(0.002)


def client_for(srv: Any, sleeps: Recorder, **kwargs: Any) -> TpuClient:
    params = {"auth_kind": "accesstoken", "access_token": TOKEN, "base_url": srv.api_url}
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("max_sleep", 0.04)
    return TpuClient.from_params(params, sleep=sleeps, **kwargs)


def api_requests(server: Any) -> int:
    return admin(server.root_url, "GET", "stats")["requests"]
