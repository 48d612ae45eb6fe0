"""HTTP front of the emulator: the TPU v2 REST API under /v2/ and admin endpoints under /_emulator/.

Admin endpoints (no token needed; they stand for things the real service does on its own):

    GET    /_emulator/health                     {"ok": true}
    GET    /_emulator/stats                      request counts (API requests only)
    POST   /_emulator/stats/reset                zero the counters
    POST   /_emulator/reset                      initial state, no faults, zero counters
    GET    /_emulator/state                      current state (the shape --state accepts)
    POST   /_emulator/state                      replace the state (and make it the initial one)
    GET    /_emulator/faults                     current fault plan
    POST   /_emulator/faults                     replace the fault plan (see faults.py)
    DELETE /_emulator/faults                     clear it
    POST   /_emulator/projects/P/locations/Z/nodes/N:preempt   node becomes PREEMPTED
    POST   /_emulator/projects/P/locations/Z/nodes/N:maintenance   workers reboot (health
           UNHEALTHY_MAINTENANCE, then HEALTHY with the addresses read again)
    POST   /_emulator/projects/P/locations/Z/nodes/N:set       body {state, health, ...}
    POST   /_emulator/projects/P/locations/Z/queuedResources/Q:fail|suspend|provision
           the request FAILS (body {message}), is SUSPENDED (nodes deleted), or gets capacity
    POST   /_emulator/projects/P/locations/Z/queuedResources:failNext   the zone's next
           request(s) FAIL once accepted (body {message, times})
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import errors
from .faults import NoAnswer
from .model import Emulator

_ADMIN_NODE = re.compile(
    r"^/_emulator/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+):(?P<a>[a-z]+)$"
)

_ADMIN_QR = re.compile(
    r"^/_emulator/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources(/(?P<q>[^/:]+))?"
    r":(?P<a>[a-zA-Z]+)$"
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes; without this, Nagle's algorithm and delayed
    # ACKs add about 40 ms to every keep-alive request
    disable_nagle_algorithm = True
    server_version = "tpu-emulator/1"
    emulator: Emulator
    verbose = False

    def log_message(self, format: str, *args: Any) -> None:
        if self.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, payload: dict[str, Any] | None) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError:
            raise errors.invalid("Invalid JSON payload received.") from None

    def _handle(self, method: str) -> None:
        split = urlsplit(self.path)
        try:
            body = self._body()
            if split.path.startswith("/_emulator/") or split.path == "/_emulator":
                self._send(*self._admin(method, split.path, body))
                return
            query = parse_qs(split.query, keep_blank_values=True)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = self.emulator.dispatch(method, split.path, query, body, headers)
        except NoAnswer:  # a drop fault: the connection closes without an answer
            self.close_connection = True
            return
        except errors.ApiError as exc:
            status, payload = exc.code, exc.body()
        except ValueError as exc:
            status, payload = 400, errors.invalid(str(exc)).body()
        self._send(status, payload)

    def _admin(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        emulator = self.emulator
        body = body if isinstance(body, dict) else {}
        if method == "GET" and path == "/_emulator/health":
            return 200, {"ok": True}
        if method == "GET" and path == "/_emulator/stats":
            return 200, emulator.stats()
        if method == "POST" and path == "/_emulator/stats/reset":
            emulator.reset_stats()
            return 200, emulator.stats()
        if method == "POST" and path == "/_emulator/reset":
            emulator.reset()
            return 200, {"ok": True}
        if method == "GET" and path == "/_emulator/state":
            return 200, emulator.dump()
        if method == "POST" and path == "/_emulator/state":
            emulator.set_initial(body)
            return 200, {"ok": True}
        if path == "/_emulator/faults":
            if method == "GET":
                return 200, emulator.faults.to_dict()
            if method == "POST":
                emulator.faults.load(body)
                return 200, emulator.faults.to_dict()
            if method == "DELETE":
                emulator.faults.clear()
                return 200, emulator.faults.to_dict()
        match = _ADMIN_NODE.match(path)
        if method == "POST" and match:
            node = emulator.admin_node(match["p"], match["z"], match["n"], match["a"], body)
            return 200, node
        match = _ADMIN_QR.match(path)
        if method == "POST" and match:
            qr_id = match["q"] or "-"
            return 200, emulator.admin_queued(match["p"], match["z"], qr_id, match["a"], body)
        raise errors.ApiError(404, f"no admin endpoint {method} {path}")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


class EmulatorServer:
    """An emulator served over HTTP on a background thread.

    >>> server = EmulatorServer(Emulator(state)).start()   # port 0 picks a free port
    >>> server.api_url                                     # http://127.0.0.1:PORT/v2
    >>> server.stop()
    """

    def __init__(
        self, emulator: Emulator, host: str = "127.0.0.1", port: int = 0, verbose: bool = False
    ) -> None:
        self.emulator = emulator
        handler = type("Handler", (_Handler,), {"emulator": emulator, "verbose": verbose})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.root_url}/v2"

    def start(self) -> EmulatorServer:
        # a short poll interval makes stop() quick; serving itself does not poll
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), name="tpu-emulator", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.emulator.backend.close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
