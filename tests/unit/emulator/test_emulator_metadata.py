"""The emulated workers' metadata server (tools/tpu_emulator/metadata.py), without Docker: a
MetadataServer on a loopback port whose resolver says the caller is worker 1 of node ``pod``.
What a TPU VM's programs read (instance and project attributes, the service account's email and
token, through google-auth's own compute-engine credentials), the guest attributes a worker
writes and nodes.getGuestAttributes reads, and the requests Compute Engine refuses."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tools.tpu_emulator.metadata import MetadataServer, WorkerRef
from tools.tpu_emulator.testing import call, node, serve

P = "proj"
ZONE = "us-central2-b"
NODE = "pod"
LOC = f"/v2/projects/{P}/locations/{ZONE}"
KEYS = "tpu:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleXRlc3RrZXl0ZXN0a2V5dGVzdGtleQ me"
FLAVOR = {"Metadata-Flavor": "Google"}


def state(**settings: Any) -> dict[str, Any]:
    pod = node(NODE, "v4-16")
    pod["metadata"] = {"ssh-keys": KEYS, "startup-script": "#!/bin/bash\necho hi\n", "team": "x"}
    narrow = node("narrow", "v4-8")
    narrow["serviceAccount"] = {
        "email": "runner@proj.iam.gserviceaccount.com",
        "scope": ["https://www.googleapis.com/auth/devstorage.read_only"],
    }
    return {
        "settings": settings,
        "projects": {
            P: {
                "number": "123456789012",
                "metadata": {"enable-oslogin": "FALSE"},
                "zones": {ZONE: {"nodes": [pod, narrow]}},
            }
        },
    }


class Pod:
    """The emulator's API and the metadata server of one of its workers."""

    def __init__(self, api: Any, metadata: MetadataServer, ref: WorkerRef) -> None:
        self.api = api
        self.metadata = metadata
        self.ref = ref
        host, port = metadata.address
        self.root = f"http://{host}:{port}"

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
        return self.send("GET", path, headers=FLAVOR if headers is None else headers)

    def send(
        self, method: str, path: str, data: bytes | None = None, headers: dict[str, str] = FLAVOR
    ) -> tuple[int, str, Any]:
        """(status, body text, response headers); redirects are not followed."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        request = urllib.request.Request(self.root + path, data=data, method=method)
        for key, value in headers.items():
            request.add_header(key, value)
        try:
            with opener.open(request, timeout=10) as response:
                return response.status, response.read().decode(), response.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), exc.headers

    def guest_attributes(self, query_path: str = "") -> list[dict[str, Any]]:
        status, body = call(
            self.api.root_url, "POST", f"{LOC}/nodes/{NODE}:getGuestAttributes",
            {"queryPath": query_path},
        )  # fmt: skip
        assert status == 200, body
        return body["guestAttributes"]


def worker(pod_node: str = NODE, index: int = 1) -> WorkerRef:
    return WorkerRef(P, ZONE, pod_node, index, f"t1v-n-0000abcd-w-{index}", "127.0.0.1")


@pytest.fixture
def pod() -> Iterator[Pod]:
    with serve(state()) as api:
        ref = worker()
        server = MetadataServer(api.emulator.metadata, "127.0.0.1", 0, lambda ip: ref)
        server.start()
        try:
            yield Pod(api, server, ref)
        finally:
            server.stop()


# -- what Compute Engine refuses -------------------------------------------------------------


def test_a_request_without_the_flavor_header_is_refused(pod: Pod) -> None:
    status, body, headers = pod.get("/computeMetadata/v1/instance/name", headers={})
    assert status == 403 and "Metadata-Flavor" in body
    assert headers["Metadata-Flavor"] == "Google"
    wrong = pod.get("/computeMetadata/v1/instance/name", headers={"Metadata-Flavor": "google"})
    assert wrong[0] == 403


def test_a_forwarded_request_is_refused_even_with_the_header(pod: Pod) -> None:
    status, body, _ = pod.get(
        "/computeMetadata/v1/instance/name", headers={**FLAVOR, "X-Forwarded-For": "10.0.0.9"}
    )
    assert status == 403 and "X-Forwarded-For" in body


def test_the_legacy_header_is_accepted(pod: Pod) -> None:
    status, body, _ = pod.get(
        "/computeMetadata/v1/instance/name", headers={"X-Google-Metadata-Request": "True"}
    )
    assert (status, body) == (200, "t1v-n-0000abcd-w-1")


def test_an_address_that_is_no_worker_gets_nothing() -> None:
    with serve(state()) as api:
        server = MetadataServer(api.emulator.metadata, "127.0.0.1", 0, lambda ip: None).start()
        try:
            probe = Pod(api, server, worker())
            status, body, _ = probe.get("/computeMetadata/v1/instance/attributes/ssh-keys")
            assert status == 403 and "not a worker" in body
        finally:
            server.stop()


# -- what a worker reads -----------------------------------------------------------------------


def test_instance_attributes_are_the_nodes_metadata(pod: Pod) -> None:
    status, listing, headers = pod.get("/computeMetadata/v1/instance/attributes/")
    assert status == 200 and listing.splitlines() == ["ssh-keys", "startup-script", "team"]
    assert headers["Content-Type"] == "application/text"
    assert pod.get("/computeMetadata/v1/instance/attributes/ssh-keys")[1] == KEYS
    script = pod.get("/computeMetadata/v1/instance/attributes/startup-script")[1]
    assert script == "#!/bin/bash\necho hi\n"
    assert pod.get("/computeMetadata/v1/instance/attributes/nothing")[0] == 404
    as_json = pod.get("/computeMetadata/v1/instance/attributes/team?alt=json")
    assert json.loads(as_json[1]) == "x"


def test_a_folder_asked_for_without_its_slash_is_redirected(pod: Pod) -> None:
    status, _, headers = pod.get("/computeMetadata/v1/instance/attributes?recursive=true")
    assert status == 301
    assert headers["Location"] == "/computeMetadata/v1/instance/attributes/?recursive=true"


def test_recursive_answers_are_json_with_attribute_keys_kept(pod: Pod) -> None:
    status, body, headers = pod.get("/computeMetadata/v1/instance/?recursive=true")
    assert status == 200 and headers["Content-Type"] == "application/json"
    instance = json.loads(body)
    assert instance["attributes"]["ssh-keys"] == KEYS  # data keys as they are
    endpoints = pod.api.emulator.projects[P].nodes[ZONE][NODE]["networkEndpoints"]
    assert instance["networkInterfaces"][0]["ip"] == endpoints[1]["ipAddress"]  # worker 1's
    assert instance["zone"] == f"projects/123456789012/zones/{ZONE}"
    account = instance["serviceAccounts"]["default"]
    assert "token" not in account  # never in a recursive answer
    assert pod.get("/computeMetadata/v1/instance/?recursive=true&alt=text")[0] == 400


def test_project_attributes_and_ids(pod: Pod) -> None:
    assert pod.get("/computeMetadata/v1/project/project-id")[1] == P
    assert pod.get("/computeMetadata/v1/project/numeric-project-id")[1] == "123456789012"
    assert pod.get("/computeMetadata/v1/project/attributes/")[1] == "enable-oslogin\n"
    assert pod.get("/computeMetadata/v1/project/attributes/enable-oslogin")[1] == "FALSE"


def test_the_service_account_is_the_projects_default_with_the_nodes_scopes(pod: Pod) -> None:
    email = "123456789012-compute@developer.gserviceaccount.com"
    assert pod.get("/computeMetadata/v1/instance/service-accounts/default/email")[1] == email
    listing = pod.get("/computeMetadata/v1/instance/service-accounts/")[1].splitlines()
    assert listing == ["default/", f"{email}/"]
    info = json.loads(
        pod.get("/computeMetadata/v1/instance/service-accounts/default/?recursive=true")[1]
    )
    assert info == {
        "aliases": ["default"],
        "email": email,
        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    scopes = pod.get("/computeMetadata/v1/instance/service-accounts/default/scopes")
    assert scopes[:2] == (200, "https://www.googleapis.com/auth/cloud-platform\n")
    account = pod.get("/computeMetadata/v1/instance/service-accounts/default/")[1]
    assert account.splitlines() == ["aliases", "email", "scopes", "token"]
    token = json.loads(pod.get("/computeMetadata/v1/instance/service-accounts/default/token")[1])
    assert token["token_type"] == "Bearer" and 3000 < token["expires_in"] <= 3599
    same = json.loads(pod.get(f"/computeMetadata/v1/instance/service-accounts/{email}/token")[1])
    assert same["access_token"] == token["access_token"]  # handed out again while it is fresh


def test_not_emulated_paths_say_so(pod: Pod) -> None:
    status, body, _ = pod.get("/computeMetadata/v1/instance/attributes/?wait_for_change=true")
    assert status == 400 and "not emulated" in body
    assert pod.get("/computeMetadata/v1/instance/attributes/accelerator-type")[0] == 404


# -- google-auth's compute-engine credentials ------------------------------------------------------


def test_google_auths_compute_engine_credentials_get_a_token_the_api_accepts(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.auth.compute_engine import _metadata
    from google.auth.compute_engine import credentials as gce
    from google.auth.transport.requests import Request

    host, port = pod.metadata.address
    # A TPU VM resolves metadata.google.internal; here the test points google-auth at the port.
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", f"{host}:{port}")
    creds = gce.Credentials()
    creds.refresh(Request())
    assert creds.service_account_email == "123456789012-compute@developer.gserviceaccount.com"
    assert creds.token.startswith("ya29.")
    status, body = call(pod.api.root_url, "GET", f"{LOC}/nodes/{NODE}", token=creds.token)
    assert status == 200, body


def test_a_minted_token_counts_besides_the_listed_ones_until_it_expires() -> None:
    with serve(state(tokens=["listed"], token_lifetime=1)) as api:
        ref = worker()
        server = MetadataServer(api.emulator.metadata, "127.0.0.1", 0, lambda ip: ref).start()
        try:
            pod = Pod(api, server, ref)
            answer = pod.get("/computeMetadata/v1/instance/service-accounts/default/token")
            token = json.loads(answer[1])["access_token"]
            assert call(api.root_url, "GET", f"{LOC}/nodes/{NODE}", token=token)[0] == 200
            assert call(api.root_url, "GET", f"{LOC}/nodes/{NODE}", token="made-up")[0] == 401
            time.sleep(1.1)
            status, body = call(api.root_url, "GET", f"{LOC}/nodes/{NODE}", token=token)
            assert status == 401, body
        finally:
            server.stop()


def test_a_token_without_the_cloud_platform_scope_is_refused() -> None:
    with serve(state()) as api:
        ref = worker("narrow", 0)
        server = MetadataServer(api.emulator.metadata, "127.0.0.1", 0, lambda ip: ref).start()
        try:
            pod = Pod(api, server, ref)
            email = pod.get("/computeMetadata/v1/instance/service-accounts/default/email")[1]
            assert email == "runner@proj.iam.gserviceaccount.com"
            answer = pod.get("/computeMetadata/v1/instance/service-accounts/default/token")
            token = json.loads(answer[1])["access_token"]
            status, body = call(api.root_url, "GET", f"{LOC}/nodes/narrow", token=token)
            assert status == 403, body
            assert body["error"]["details"][0]["reason"] == "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
        finally:
            server.stop()


# -- guest attributes ------------------------------------------------------------------------------


def test_a_worker_writes_guest_attributes_that_the_api_reads(pod: Pod) -> None:
    path = "/computeMetadata/v1/instance/guest-attributes/cloudtpu/pull-result"
    assert pod.send("PUT", path, b'{"state": "running"}')[0] == 200
    assert pod.get(path)[1] == '{"state": "running"}'
    assert pod.send("PUT", path, b'{"state": "done", "rc": 0}')[0] == 200
    workers = pod.guest_attributes("cloudtpu/")
    assert [w["queryValue"] for w in workers] == [
        {},
        {
            "items": [
                {
                    "namespace": "cloudtpu",
                    "key": "pull-result",
                    "value": '{"state": "done", "rc": 0}',
                }
            ]
        },
    ]  # worker 0 wrote nothing
    everything = pod.guest_attributes()[1]["queryValue"]["items"]
    assert [(i["namespace"], i["key"]) for i in everything] == [
        ("cloudtpu", "pull-result"),
        ("hostkeys", "ssh-ed25519"),
    ]
    assert pod.send("DELETE", path)[0] == 200
    assert pod.guest_attributes("cloudtpu/")[1]["queryValue"] == {}
    assert pod.get(path)[0] == 404


def test_guest_attribute_names_and_methods_are_checked(pod: Pod) -> None:
    base = "/computeMetadata/v1/instance/guest-attributes"
    assert pod.send("PUT", f"{base}/only-a-namespace", b"x")[0] == 400
    assert pod.send("PUT", f"{base}/bad.ns/key", b"x")[0] == 400
    assert pod.send("PUT", f"{base}/ns/key", b"\xff")[0] == 400
    assert pod.send("PUT", "/computeMetadata/v1/instance/attributes/team", b"y")[0] == 405


def test_a_node_made_again_under_its_name_has_no_guest_attributes(pod: Pod) -> None:
    path = "/computeMetadata/v1/instance/guest-attributes/cloudtpu/pull-result"
    assert pod.send("PUT", path, b"done")[0] == 200
    emulator = pod.api.emulator
    with emulator.lock:
        current = emulator.projects[P].nodes[ZONE][NODE]
        current["createTime"] = "2030-01-01T00:00:00.000000Z"  # what a new node of the name has
    assert pod.guest_attributes("cloudtpu/")[1]["queryValue"] == {}
    assert pod.send("PUT", path, b"again")[0] == 200
    assert len([k for k in emulator.guest if k[0].endswith(f"/nodes/{NODE}")]) == 1
