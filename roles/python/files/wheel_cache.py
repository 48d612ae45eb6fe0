"""The pod's wheel cache (cloudtpu.pod.python tasks/pod_wheels.yml: uv, and the framework's wheels).

Two commands, both with the standard library only:

    wheel_cache.py manifest DIR
        Reads every distribution file in DIR (what one ``pip download`` saved there) and prints
        JSON: {"files": [{"file", "name", "version", "sha256", "size"}], "requirements": TEXT}.
        TEXT is a requirements file with one ``name==version --hash=sha256:...`` line per
        distribution, for ``pip install --require-hashes`` (uv reads the same file).

    wheel_cache.py fetch --url http://ADDR:PORT --manifest FILE DIR
        Copies every file the manifest (the JSON above) lists from the server into DIR, checking
        each one's sha256 and size while it streams; a file that differs is removed and the
        command fails naming it. No proxy is used: the server is inside the pod.

    wheel_cache.py serve --bind ADDR --port N --allow ADDR [--allow ADDR ...] DIR
        Serves the distribution files of DIR (GET and HEAD of /<file name>, nothing else: no
        listing, no sub-folders) to the addresses given with --allow, and answers 403 to any
        other client. Runs until stopped (the role runs it in a transient systemd unit with a
        RuntimeMaxSec bound and stops it as soon as the workers have their copies).

The workers fetch each file with the sha256 of the manifest (which reaches them through Ansible,
not through this server) and install from their local copy with --require-hashes.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import ipaddress
import json
import re
import socket
import sys
import tarfile
import urllib.request
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

# Python 3.8 (Ubuntu 20.04 images) runs the server: nothing newer than 3.8 in here.
SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+!-]*$")


class ManifestError(Exception):
    """A file of the folder cannot be described (no metadata, or two versions of one project)."""


def is_distribution(name: str) -> bool:
    return SAFE_NAME.match(name) is not None and name.endswith(SUFFIXES)


def canonical(name: str) -> str:
    """The project name as PEP 503 normalises it (lower case, runs of -_. as one -)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _headers(text: str, where: str) -> tuple[str, str]:
    headers = HeaderParser().parsestr(text, headersonly=True)
    name, version = headers.get("Name"), headers.get("Version")
    if not name or not version:
        raise ManifestError(f"{where} has no Name or Version header")
    return name.strip(), version.strip()


def metadata(path: Path) -> tuple[str, str]:
    """(name, version) from a wheel's METADATA or an sdist's PKG-INFO."""
    where = path.name
    try:
        if path.name.endswith(".whl"):
            with zipfile.ZipFile(path) as archive:
                found = [
                    n for n in archive.namelist() if re.match(r"^[^/]+\.dist-info/METADATA$", n)
                ]
                if len(found) != 1:
                    raise ManifestError(
                        f"{where}: expected one *.dist-info/METADATA, found {len(found)}"
                    )
                return _headers(archive.read(found[0]).decode("utf-8", "replace"), where)
        if path.name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                found = [n for n in archive.namelist() if re.match(r"^[^/]+/PKG-INFO$", n)]
                if not found:
                    raise ManifestError(f"{where}: no PKG-INFO at the top of the archive")
                return _headers(archive.read(found[0]).decode("utf-8", "replace"), where)
        with tarfile.open(path) as archive:
            for member in archive:
                if re.match(r"^[^/]+/PKG-INFO$", member.name) and member.isfile():
                    handle = archive.extractfile(member)
                    if handle is not None:
                        return _headers(handle.read().decode("utf-8", "replace"), where)
        raise ManifestError(f"{where}: no PKG-INFO at the top of the archive")
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as error:
        raise ManifestError(f"{where} cannot be read: {error}") from error


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest(folder: Path) -> dict[str, Any]:
    """Describe every distribution file of the folder and write their hashed requirements."""
    files = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and is_distribution(path.name):
            name, version = metadata(path)
            files.append(
                {
                    "file": path.name,
                    "name": name,
                    "version": version,
                    "sha256": sha256(path),
                    "size": path.stat().st_size,
                }
            )
    if not files:
        raise ManifestError(f"{folder} holds no distribution files ({', '.join(SUFFIXES)})")
    projects: dict[str, dict[str, Any]] = {}
    for entry in files:
        key = canonical(entry["name"])
        project = projects.setdefault(key, {"version": entry["version"], "hashes": []})
        if project["version"] != entry["version"]:
            raise ManifestError(
                f"{folder} holds two versions of {entry['name']} ({project['version']} and "
                f"{entry['version']}): it must hold one download only"
            )
        project["hashes"].append(entry["sha256"])
    lines = [
        f"{key}=={project['version']}"
        + "".join(f" --hash=sha256:{h}" for h in sorted(project["hashes"]))
        for key, project in sorted(projects.items())
    ]
    return {"files": files, "requirements": "\n".join(lines) + "\n"}


def fetch(url: str, entries: list[dict[str, Any]], folder: Path, timeout: float = 60) -> int:
    """Copy the manifest's files from the pod's server into folder; return the bytes copied."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    total = 0
    for entry in entries:
        name = entry["file"]
        if not is_distribution(name):
            raise ManifestError(f"the manifest names {name!r}, which is not a distribution file")
        part = folder / (name + ".part")
        digest = hashlib.sha256()
        size = 0
        try:
            with opener.open(f"{url.rstrip('/')}/{name}", timeout=timeout) as response:
                with part.open("wb") as handle:
                    for block in iter(lambda: response.read(1 << 20), b""):
                        digest.update(block)
                        size += len(block)
                        handle.write(block)
        except OSError as error:
            if part.exists():
                part.unlink()
            raise ManifestError(f"{name}: {error}") from error
        if digest.hexdigest() != entry["sha256"] or size != entry["size"]:
            part.unlink()
            raise ManifestError(
                f"{name}: got {size} bytes with sha256 {digest.hexdigest()}, the manifest says "
                f"{entry['size']} bytes with sha256 {entry['sha256']}"
            )
        part.replace(folder / name)
        total += size
    return total


def make_handler(folder: Path, allowed: set[str]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "cloudtpu-wheels"
        sys_version = ""

        def _file(self) -> Path | None:
            client = self.client_address[0]
            if client.startswith("::ffff:"):  # an IPv4 client of an IPv6 socket
                client = client[len("::ffff:") :]
            if str(ipaddress.ip_address(client)) not in allowed:
                self.send_error(403, "not a member of this pod")
                return None
            name = self.path.split("?", 1)[0].lstrip("/")
            path = folder / name
            if not is_distribution(name) or not path.is_file():
                self.send_error(404)
                return None
            return path

        def _head(self, path: Path) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()

        def do_HEAD(self) -> None:
            path = self._file()
            if path is not None:
                self._head(path)

        def do_GET(self) -> None:
            path = self._file()
            if path is None:
                return
            self._head(path)
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    self.wfile.write(block)

    return Handler


def make_server(
    bind: str, port: int, folder: Path, allow: list[str]
) -> http.server.ThreadingHTTPServer:
    allowed = {str(ipaddress.ip_address(a)) for a in allow}
    server_class = http.server.ThreadingHTTPServer
    if ipaddress.ip_address(bind).version == 6:

        class V6Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6

        server_class = V6Server
    return server_class((bind, port), make_handler(folder.resolve(), allowed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    describe = commands.add_parser("manifest", help="hashed requirements for a folder of downloads")
    describe.add_argument("folder", type=Path)
    copy = commands.add_parser("fetch", help="copy the manifest's files from the pod's server")
    copy.add_argument("--url", required=True, help="http://<coordinator>:<port>")
    copy.add_argument("--manifest", required=True, type=Path, help="the manifest's JSON")
    copy.add_argument("folder", type=Path)
    serve = commands.add_parser(
        "serve", help="serve a folder's distributions to the pod's addresses"
    )
    serve.add_argument("--bind", required=True, help="the coordinator's address inside the pod")
    serve.add_argument("--port", required=True, type=int)
    serve.add_argument("--allow", action="append", required=True, help="a pod member's address")
    serve.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "manifest":
        try:
            print(json.dumps(manifest(args.folder)))
        except (ManifestError, OSError) as error:
            print(f"wheel_cache.py manifest: {error}", file=sys.stderr)
            return 1
        return 0
    if args.command == "fetch":
        try:
            entries = json.loads(args.manifest.read_text())["files"]
            total = fetch(args.url, entries, args.folder)
        except (ManifestError, OSError, ValueError, KeyError) as error:
            print(f"wheel_cache.py fetch: {error}", file=sys.stderr)
            return 1
        print(json.dumps({"files": len(entries), "bytes": total}))
        return 0
    try:
        server = make_server(args.bind, args.port, args.folder, args.allow)
    except (ValueError, OSError) as error:
        print(f"wheel_cache.py serve: {error}", file=sys.stderr)
        return 1
    print(
        f"serving {args.folder} on {args.bind}:{args.port} to {', '.join(sorted(args.allow))}",
        flush=True,
    )
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
