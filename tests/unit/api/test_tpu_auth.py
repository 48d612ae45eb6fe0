"""Credentials from the auth options (plugins/module_utils/tpu_auth.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_auth import (
    AuthConfigError,
    check_options,
    credentials,
)
from google.oauth2 import credentials as oauth2_credentials

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


@pytest.mark.parametrize(
    ("params", "phrases"),
    [
        (
            {"auth_kind": "application", "service_account_file": "/k.json"},
            [
                "service_account_file is set but auth_kind is 'application'",
                "GCP_SERVICE_ACCOUNT_FILE",
            ],
        ),
        (
            {"auth_kind": "serviceaccount", "access_token": "t"},
            ["access_token is set but auth_kind is 'serviceaccount'", "GCP_ACCESS_TOKEN"],
        ),
        (
            {"auth_kind": "accesstoken", "service_account_email": "a@b"},
            ["only works with auth_kind 'machineaccount'"],
        ),
        (
            {"service_account_contents": "{}"},
            ["auth_kind is 'application'", "GCP_SERVICE_ACCOUNT_CONTENTS"],
        ),
    ],
)
def test_options_of_another_kind_are_refused(params: dict[str, Any], phrases: list[str]) -> None:
    with pytest.raises(AuthConfigError) as raised:
        check_options(params)
    for phrase in phrases:
        assert phrase in str(raised.value)


@pytest.mark.parametrize(
    "params",
    [
        {"auth_kind": "application"},
        {"auth_kind": "accesstoken", "access_token": "t"},
        {"auth_kind": "serviceaccount", "service_account_file": "/k.json"},
        {"auth_kind": "machineaccount", "service_account_email": "a@b"},
        {"auth_kind": None},
    ],
)
def test_options_of_the_same_kind_pass(params: dict[str, Any]) -> None:
    check_options(params)


def test_access_token_gives_bearer_credentials() -> None:
    creds = credentials({"auth_kind": "accesstoken", "access_token": "tok", "scopes": SCOPES})
    assert isinstance(creds, oauth2_credentials.Credentials)
    assert creds.token == "tok"


@pytest.mark.parametrize(
    ("setup", "phrases"),
    [
        (
            "missing",
            ["cannot read service_account_file", "No such file", "GCP_SERVICE_ACCOUNT_FILE"],
        ),
        ("not-json", ["is not JSON", "service account key"]),
        ("list", ["must hold a JSON object"]),
        ("no-key", ["is not a usable service account key", "Download a new JSON key"]),
        ("neither", ["needs service_account_file", "GCP_SERVICE_ACCOUNT_CONTENTS"]),
    ],
)
def test_bad_service_account_keys_say_what_to_do(
    tmp_path: Path, setup: str, phrases: list[str]
) -> None:
    key = tmp_path / "key.json"
    params: dict[str, Any] = {"auth_kind": "serviceaccount", "scopes": SCOPES}
    if setup == "not-json":
        key.write_text("this is not json")
    elif setup == "list":
        key.write_text("[]")
    elif setup == "no-key":
        key.write_text(json.dumps({"type": "service_account", "client_email": "a@b"}))
    if setup != "neither":
        params["service_account_file"] = str(key)
    with pytest.raises(AuthConfigError) as raised:
        credentials(params)
    for phrase in phrases:
        assert phrase in str(raised.value), str(raised.value)


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(AuthConfigError, match="is not one of application"):
        credentials({"auth_kind": "kerberos"})


def test_client_reports_auth_setup_errors_as_api_errors(tmp_path: Path) -> None:
    params = {"auth_kind": "serviceaccount", "service_account_file": str(tmp_path / "none.json")}
    with pytest.raises(TpuApiError) as raised:
        TpuClient.from_params(params)
    assert raised.value.reason == "AUTH_CONFIG"
    assert "Google authentication setup failed: cannot read service_account_file" in str(
        raised.value
    )


def test_client_session_comes_from_the_auth_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    def fake_session(params: dict[str, Any]) -> str:
        seen.append(dict(params))
        return "session"

    monkeypatch.setattr(
        "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_transport.authorized_session",
        fake_session,
    )
    client = TpuClient.from_params({"auth_kind": "accesstoken", "access_token": "t"})
    assert client._http == "session"
    assert seen[0]["access_token"] == "t"
    assert seen[0]["scopes"] == SCOPES, "the default scope was not filled in"
