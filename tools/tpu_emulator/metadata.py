"""The metadata server of every emulated TPU VM worker: what ``metadata.google.internal``
answers on a TPU VM, for the worker that asks.

Paths under ``/computeMetadata/v1/`` (a folder ends in ``/``; asked for without it, the answer is
a 301 to it, as on Compute Engine):

    instance/attributes/                    the node's metadata (ssh-keys, startup-script, the
                                            user's own keys), one key a line; KEY its value
    instance/service-accounts/              default/ and the account's email/
    instance/service-accounts/SA/           aliases, email, scopes, token
    instance/service-accounts/SA/token      {"access_token", "expires_in", "token_type"}: a token
                                            of the node's service account that the emulator's API
                                            accepts (Service.mint_token)
    instance/guest-attributes/NS/KEY        GET, PUT (the body is the value), DELETE; what a worker
                                            writes, nodes.getGuestAttributes reads
    instance/hostname, id, name, zone, network-interfaces/0/ip
    project/attributes/                     the project's metadata (``metadata`` of the project in
                                            the state file), project-id, numeric-project-id

``?recursive=true`` answers a folder as JSON (built-in names in camelCase, attribute keys as
they are), ``?alt=json`` a value as JSON, ``?alt=text`` (the default) as text. As on Compute
Engine, a request needs ``Metadata-Flavor: Google`` (or the legacy ``X-Google-Metadata-Request:
True``) and one that carries ``X-Forwarded-For`` is refused (403), so that a proxy on the VM
cannot pass requests from elsewhere on. Answers carry ``Metadata-Flavor: Google``.

Not emulated (answered 400 or 404, never made up): ``wait_for_change``, ``alt=text`` with
``recursive``, identity tokens (``.../identity``), and the TPU runtime's own attributes
(``accelerator-type``, ``agent-worker-number``, ``worker-network-endpoints``, ``tpu-env``).

:class:`MetadataServer` serves one address; who asks is found by the client's address through a
``resolver`` (the Docker backend maps a container's address on its node's network to the
worker), since on Compute Engine a VM's metadata server answers that VM alone.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PREFIX = "/computeMetadata/v1/"
HOST_NAME = "metadata.google.internal"
FLAVOR = ("Metadata-Flavor", "Google")
# Names of guest attribute namespaces and keys, and the largest value: the emulator's own bounds.
GUEST_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")
GUEST_VALUE_MAX = 100 * 1024


@dataclass(frozen=True)
class WorkerRef:
    """The worker a request comes from: its node, its index and what its VM is called."""

    project: str
    zone: str
    node_id: str
    worker: int
    hostname: str = ""
    address: str = ""


@dataclass
class Answer:
    status: int
    body: bytes = b""
    content_type: str = "application/text"
    location: str = ""


class Raw(dict):
    """A folder whose keys are data (attribute keys): kept as they are in recursive JSON."""


def _camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _json(value: Any) -> Any:
    """A recursive answer: built-in names in camelCase, the keys of Raw folders as they are."""
    if isinstance(value, dict):
        keep = isinstance(value, Raw)
        return {(key if keep else _camel(key)): _json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json(item) for item in value]
    return value


def _folder(value: Any) -> bool:
    """A folder: a mapping, or a list of folders (network-interfaces/0/); a list of strings
    (scopes, aliases) is a value, one a line."""
    return isinstance(value, dict) or (
        isinstance(value, list) and not all(isinstance(item, str) for item in value)
    )


def _text(status: int, message: str) -> Answer:
    return Answer(status, (message + "\n").encode(), "text/plain; charset=utf-8")


def _json_answer(value: Any) -> Answer:
    return Answer(200, json.dumps(value).encode(), "application/json")


class MetadataService:
    """The answers of the metadata server, from the emulator's state (``emulator``: the
    :class:`~tools.tpu_emulator.model.Emulator`, through its Service methods)."""

    def __init__(self, emulator: Any) -> None:
        self.emulator = emulator

    def tree(self, ref: WorkerRef) -> dict[str, Any] | None:
        """Everything the worker may read, as nested dicts (None: the node is gone)."""
        facts = self.emulator.worker_facts(ref)
        if facts is None:
            return None
        account = {
            "aliases": ["default"],
            "email": facts["email"],
            "scopes": list(facts["scopes"]),
            "token": None,  # answered by _token
        }
        name = ref.hostname or f"{ref.node_id}-w-{ref.worker}"
        interface = {"ip": facts["ip"], "network": f"projects/{facts['number']}/networks/default"}
        return {
            "instance": {
                "attributes": Raw(facts["metadata"]),
                "guest-attributes": Raw(
                    {ns: Raw(keys) for ns, keys in facts["guest_attributes"].items()}
                ),
                "hostname": f"{name}.{ref.zone}.c.{ref.project}.internal",
                "id": facts["id"],
                "name": name,
                "network-interfaces": [interface],
                "service-accounts": Raw({"default": account, facts["email"]: account}),
                "zone": f"projects/{facts['number']}/zones/{ref.zone}",
            },
            "project": {
                "attributes": Raw(facts["project_metadata"]),
                "numeric-project-id": facts["number"],
                "project-id": ref.project,
            },
        }

    def answer(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        ref: WorkerRef | None,
    ) -> Answer:
        """The answer to one request (``headers`` with lower-case names)."""
        if "x-forwarded-for" in headers:
            return _text(403, "Request had an X-Forwarded-For header: forwarded requests refused.")
        flavor = headers.get("metadata-flavor")
        legacy = headers.get("x-google-metadata-request", "").lower() == "true"
        if flavor != "Google" and not legacy:
            return _text(403, "Missing Metadata-Flavor:Google header.")
        split = urlsplit(target)
        if split.path == "/":
            return Answer(200, b"computeMetadata/\n")
        if split.path in ("/computeMetadata", "/computeMetadata/"):
            return Answer(200, b"v1/\n")
        if not split.path.startswith(PREFIX) and split.path != PREFIX.rstrip("/"):
            return _text(404, f"{split.path} is not a path of the metadata server.")
        if ref is None:
            return _text(403, "This address is not a worker of a node of the emulator.")
        query = parse_qs(split.query, keep_blank_values=True)
        if "wait_for_change" in query:
            return _text(400, "wait_for_change is not emulated.")
        parts = [p for p in split.path[len(PREFIX) :].split("/") if p]
        folder = split.path.endswith("/")
        if parts[:2] == ["instance", "guest-attributes"] and method in ("PUT", "DELETE"):
            return self._guest_change(method, parts[2:], body, ref)
        if method == "POST" and parts[-1:] == ["token"]:
            method = "GET"  # a token asked for by POST (a bound token): the same token here
        if method != "GET":
            return _text(405, f"{method} is not allowed on {split.path}.")
        tree = self.tree(ref)
        if tree is None:
            return _text(503, "The node of this worker is gone.")
        if parts[:2] == ["instance", "service-accounts"] and parts[-1:] == ["token"]:
            return self._token(parts[2:-1], tree)
        value: Any = tree
        for part in parts:
            if isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif isinstance(value, dict) and part in value:
                value = value[part]
            else:
                return _text(404, f"{split.path} was not found.")
        recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
        alt = (query.get("alt") or ["json" if recursive else "text"])[0]
        if _folder(value):
            if not folder:
                location = split.path + "/" + (f"?{split.query}" if split.query else "")
                return Answer(301, location=location)
            if recursive:
                if alt != "json":
                    return _text(400, "alt=text with recursive=true is not emulated; use alt=json.")
                return _json_answer(_json(_drop_tokens(value)))
            names = range(len(value)) if isinstance(value, list) else value
            items = value if isinstance(value, dict) else dict(enumerate(value))
            lines = [f"{n}/" if _folder(items[n]) else str(n) for n in names]
            return Answer(200, "".join(f"{line}\n" for line in lines).encode())
        if folder:
            return _text(404, f"{split.path} is not a folder.")
        if alt == "json":
            return _json_answer(value)
        if isinstance(value, list):
            return Answer(200, "".join(f"{line}\n" for line in value).encode())
        return Answer(200, str(value).encode())

    def _token(self, account: list[str], tree: dict[str, Any]) -> Answer:
        accounts = tree["instance"]["service-accounts"]
        if len(account) != 1 or account[0] not in accounts:
            return _text(404, "No such service account on this VM.")
        email = accounts[account[0]]["email"]
        token, expires_in = self.emulator.mint_token(email, accounts[account[0]]["scopes"])
        return _json_answer(
            {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}
        )

    def _guest_change(self, method: str, path: list[str], body: bytes, ref: WorkerRef) -> Answer:
        if len(path) != 2 or not all(GUEST_NAME.match(part) for part in path):
            return _text(
                400,
                "Guest attributes are written as instance/guest-attributes/NAMESPACE/KEY (letters, "
                "digits, '_' and '-').",
            )
        value = None
        if method == "PUT":
            if len(body) > GUEST_VALUE_MAX:
                return _text(400, f"A guest attribute value may have {GUEST_VALUE_MAX} bytes.")
            try:
                value = body.decode("utf-8")
            except UnicodeDecodeError:
                return _text(400, "A guest attribute value must be UTF-8 text.")
        if not self.emulator.set_guest_attribute(ref, path[0], path[1], value):
            return _text(503, "The node of this worker is gone.")
        return Answer(200)


def _drop_tokens(value: Any) -> Any:
    """A recursive answer lists a service account without its token (as Compute Engine does)."""
    if isinstance(value, dict):
        out = type(value)((k, _drop_tokens(v)) for k, v in value.items() if k != "token")
        return out
    if isinstance(value, list):
        return [_drop_tokens(v) for v in value]
    return value


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "Metadata Server for VM"
    sys_version = ""
    service: MetadataService
    resolver: Callable[[str], WorkerRef | None]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            ref = self.resolver(self.client_address[0])
            answer = self.service.answer(method, self.path, headers, body, ref)
        except Exception as exc:  # the worker sees a 500, the emulator goes on
            answer = _text(500, f"metadata server error: {exc}")
        self.send_response(answer.status)
        self.send_header(*FLAVOR)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        if answer.location:
            self.send_header("Location", answer.location)
        self.end_headers()
        if answer.body and method != "HEAD":
            self.wfile.write(answer.body)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_POST(self) -> None:
        self._handle("POST")


class MetadataServer:
    """The metadata server on one address, answering the workers ``resolver`` names.

    >>> server = MetadataServer(service, "172.18.0.1", 80, resolver).start()
    >>> server.stop()
    """

    def __init__(
        self,
        service: MetadataService,
        host: str,
        port: int,
        resolver: Callable[[str], WorkerRef | None],
    ) -> None:
        handler = type(
            "Handler", (_Handler,), {"service": service, "resolver": staticmethod(resolver)}
        )
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> MetadataServer:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), name="tpu-metadata", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
