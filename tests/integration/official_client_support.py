"""What the tests of Google's own client library against the emulator share
(test_official_client_nodes.py, test_official_client_service.py): the emulator's state, the
emulator served in-process (``server``) and a ``google.cloud.tpu_v2.TpuClient`` of it (``client``),
as fixtures, and the RPCs the two files drive between them (COVERED).

``google-cloud-tpu`` (``google.cloud.tpu_v2.TpuClient``, REST transport) is the emulator's oracle.
The tests drive the emulator through every RPC method the client has: each answer must parse
into the client's types, long-running operations resolve to what the service documents, lists
page, and errors become the ``google.api_core`` exceptions the real service's answers become.
Over REST the class follows the HTTP status (400 BadRequest, 403 Forbidden, 404 NotFound, 409
Conflict; InvalidArgument, PermissionDenied and AlreadyExists are their gRPC-only subclasses), so
the canonical status word is checked in the error body as well.

A test file takes the fixtures by name: ``server, client = support.server, support.client``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# requirements.txt installs it (make setup): a missing client fails here, never skips
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.api_core.future import polling
from google.cloud import tpu_v2
from google.oauth2.credentials import Credentials

from tools.tpu_emulator.testing import TOKEN, admin, node, serve

PROJECT = "demo-project"
NUMBER = "100000000001"
ZONE = "us-central2-b"
PARENT = f"projects/{PROJECT}/locations/{ZONE}"
# the operation delay of the emulator, and how often the client looks again (its default
# starts at one second)
DELAY = 0.05
POLL = polling.DEFAULT_POLLING.with_delay(initial=0.02, maximum=0.1, multiplier=1.5)

# Every RPC of the client, each driven by one of the two files (a test compares this with the
# client's own list).
COVERED = {
    "cancel_operation",
    "create_node",
    "create_queued_resource",
    "delete_node",
    "delete_operation",
    "delete_queued_resource",
    "generate_service_identity",
    "get_accelerator_type",
    "get_guest_attributes",
    "get_location",
    "get_node",
    "get_operation",
    "get_queued_resource",
    "get_runtime_version",
    "list_accelerator_types",
    "list_locations",
    "list_nodes",
    "list_operations",
    "list_queued_resources",
    "list_runtime_versions",
    "reset_queued_resource",
    "start_node",
    "stop_node",
    "update_node",
}


def state() -> dict[str, Any]:
    return {
        "projects": {
            PROJECT: {
                "number": NUMBER,
                "zones": {
                    ZONE: {
                        "nodes": [
                            node("pod-a", "v4-32", labels={"team": "ml"}),
                            node("one", "v4-8"),
                            node("two", "v4-8"),
                        ]
                    },
                    "us-east1-d": {"accelerator_types": ["v5litepod-*"]},
                    "europe-west4-a": {},
                },
            }
        }
    }


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with serve(state(), operation_delay=DELAY) as srv:
        yield srv


@pytest.fixture
def client(server: Any) -> tpu_v2.TpuClient:
    admin(server.root_url, "POST", "reset")
    return tpu_v2.TpuClient(
        transport="rest",
        # the endpoint with its scheme: the REST transport keeps a given http://
        client_options=ClientOptions(api_endpoint=server.root_url),
        # a plain access token: the emulator wants a bearer token, and a token without expiry
        # is never refreshed
        credentials=Credentials(token=TOKEN),
    )


def status_word(exc: exceptions.GoogleAPICallError) -> str:
    return exc.response.json()["error"]["status"]
