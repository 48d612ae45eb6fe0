"""The TPU v2 API client's errors (plugins/module_utils/tpu_api.py), against the emulator
in-process: each failure of the service explained, with what to do about it."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import (
    TpuApiError,
    TpuClient,
    error_from_response,
)

from tests.unit.api.tpu_api_server import PROJECT, Recorder
from tools.tpu_emulator.testing import TOKEN, admin

# -- errors -------------------------------------------------------------------------------------


def test_service_disabled_says_how_to_enable_the_api(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.list_nodes("locked-project")
    assert info.value.status == 403
    assert info.value.reason == "SERVICE_DISABLED"
    assert "gcloud services enable tpu.googleapis.com --project locked-project" in str(info.value)


def test_injected_service_disabled_fault(server: Any, client: TpuClient) -> None:
    admin(
        server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": "SERVICE_DISABLED"}]}
    )
    with pytest.raises(
        TpuApiError,
        match=r"\(tpu\.googleapis\.com\) is not enabled in project demo-project",
    ):
        client.list_nodes(PROJECT)


def test_missing_permission_names_it_and_the_roles(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.list_nodes("viewer-less")
    message = str(info.value)
    assert info.value.reason == "IAM_PERMISSION_DENIED"
    assert "permission tpu.nodes.list" in message
    assert "roles/tpu.viewer" in message
    assert "roles/tpu.admin" in message


def test_permission_for_a_write_names_the_admin_role(server: Any, client: TpuClient) -> None:
    admin(
        server.root_url,
        "POST",
        "faults",
        {"rules": [{"path": "*", "method": "DELETE", "error": "PERMISSION_DENIED"}]},
    )
    with pytest.raises(TpuApiError) as info:
        client.delete_node(PROJECT, "us-central2-b", "pod-a")
    assert "permission tpu.nodes.delete" in str(info.value)
    assert "roles/tpu.admin" in str(info.value)
    assert "roles/tpu.viewer" not in str(info.value)


def test_unknown_zone_says_how_to_list_zones(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.list_nodes(PROJECT, "mars-north1-a")
    assert info.value.reason == "UNKNOWN_ZONE"
    assert "Zone mars-north1-a is unknown" in str(info.value)
    assert "gcloud compute tpus locations list --project demo-project" in str(info.value)


def test_unknown_zone_on_a_node_call_is_still_about_the_zone(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.get_node(PROJECT, "mars-north1-a", "pod-a")
    assert info.value.reason == "UNKNOWN_ZONE"


def test_missing_node_is_not_found_and_find_node_returns_none(client: TpuClient) -> None:
    with pytest.raises(TpuApiError) as info:
        client.get_node(PROJECT, "us-central2-b", "ghost")
    assert info.value.not_found
    assert "TPU node ghost was not found in project demo-project, zone us-central2-b" in str(
        info.value
    )
    assert client.find_node(PROJECT, "us-central2-b", "ghost") is None
    assert client.find_node(PROJECT, "us-central2-b", "pod-a")["state"] == "READY"


def test_rejected_token_is_a_credentials_error(server: Any, client: TpuClient) -> None:
    admin(server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": "UNAUTHENTICATED"}]})
    with pytest.raises(TpuApiError) as info:
        client.list_nodes(PROJECT)
    assert info.value.status == 401
    assert info.value.reason == "UNAUTHENTICATED"
    assert "auth_kind accesstoken" in str(info.value)
    assert "gcloud auth print-access-token" in str(info.value)


def test_wrong_base_url_is_explained(server: Any, sleeps: Recorder) -> None:
    params = {"auth_kind": "accesstoken", "access_token": TOKEN}
    client = TpuClient.from_params(params, base_url=server.root_url + "/v1", sleep=sleeps)
    with pytest.raises(TpuApiError, match="Check that the base_url option"):
        client.list_nodes(PROJECT)


def test_base_url_comes_from_the_environment(
    server: Any, monkeypatch: pytest.MonkeyPatch, sleeps: Recorder
) -> None:
    monkeypatch.setenv("CLOUDTPU_API_ENDPOINT", server.api_url)
    client = TpuClient.from_params({"auth_kind": "accesstoken", "access_token": TOKEN})
    assert client.base_url == server.api_url
    assert len(client.list_nodes(PROJECT)[0]) == 5


def test_base_url_must_be_http() -> None:
    with pytest.raises(TpuApiError, match="not an http"):
        TpuClient(None, base_url="tpu.googleapis.com/v2", session=object())


def test_auth_setup_errors_become_api_errors() -> None:
    with pytest.raises(TpuApiError, match="needs access_token"):
        TpuClient.from_params({"auth_kind": "accesstoken"})._http.request("GET", "http://x")


@pytest.mark.parametrize(
    ("status", "body", "context", "reason", "phrases"),
    [
        (
            403,
            {
                "error": {
                    "code": 403,
                    "status": "PERMISSION_DENIED",
                    "message": "Cloud TPU API has not been used in project 123 before or it "
                    "is disabled.",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "SERVICE_DISABLED",
                            "metadata": {"consumer": "projects/123"},
                        }
                    ],
                }
            },
            {},
            "SERVICE_DISABLED",
            ["--project 123"],
        ),
        (
            403,
            {"error": {"code": 403, "message": "API not enabled", "status": "PERMISSION_DENIED"}},
            {"project": "p1"},
            "SERVICE_DISABLED",
            ["gcloud services enable tpu.googleapis.com --project p1"],
        ),
        (
            403,
            {"error": {"code": 403, "message": "The caller does not have permission"}},
            {"project": "p1", "permission": "tpu.nodes.create"},
            "IAM_PERMISSION_DENIED",
            ["permission tpu.nodes.create", "roles/tpu.admin"],
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "Location us-x1-a is not found or access is unauthorized.",
                }
            },
            {"project": "p1", "zone": "us-x1-a", "resource": "TPU node n"},
            "UNKNOWN_ZONE",
            ["Zone us-x1-a is unknown"],
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "Accelerator type 'v4-9' is not supported in zone z.",
                }
            },
            {"project": "p1", "zone": "z", "resource": "TPU node n"},
            "HTTP_400",
            ["for TPU node n with 400", "v4-9"],
        ),
        (
            404,
            {
                "error": {
                    "code": 404,
                    "message": "Resource 'projects/p1/locations/z/nodes/n' was not found.",
                }
            },
            {"project": "p1", "zone": "z", "resource": "TPU node n"},
            "NOT_FOUND",
            ["TPU node n was not found"],
        ),
        (
            409,
            {"error": {"code": 409, "status": "ALREADY_EXISTS"}},
            {"resource": "TPU node n"},
            "ALREADY_EXISTS",
            ["TPU node n already exists"],
        ),
        (401, "Unauthorized", {}, "UNAUTHENTICATED", ["API said: Unauthorized", "gcloud auth"]),
        (502, "<html>bad gateway</html>", {}, "HTTP_502", ["kept answering 502"]),
    ],
)
def test_error_mapping(
    status: int, body: Any, context: dict[str, str], reason: str, phrases: list[str]
) -> None:
    error = error_from_response(status, body, **context)
    assert error.status == status
    assert error.reason == reason
    for phrase in phrases:
        assert phrase in error.message
