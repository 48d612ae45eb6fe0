"""The pod's wheel cache (cloudtpu.pod.python tasks/pod_wheels.yml: uv, and the framework's wheels).

Four commands, all with the standard library only. FOLDER is the pod's wheel folder (a folder
of root's: FOLDER/wheels holds the distributions and belongs to --owner, and
FOLDER/requirements.txt is written next to it):

    wheel_cache.py prepare --owner USER --group GROUP [--with-tool] FOLDER
        Empties FOLDER and makes it again (refusing a FOLDER reached through a symlink), with
        FOLDER/wheels for the download; --with-tool copies this program to FOLDER/wheel_cache.py
        for the server. Run on the coordinator before ``pip download``.

    wheel_cache.py manifest [--write FOLDER --owner USER --group GROUP] DIR
        Reads every distribution file in DIR (what one ``pip download`` saved there) and prints
        JSON: {"files": [{"file", "name", "version", "sha256", "size"}], "requirements": TEXT}.
        TEXT is a requirements file with one ``name==version --hash=sha256:...`` line per
        distribution, for ``pip install --require-hashes`` (uv reads the same file). --write also
        writes TEXT to FOLDER/requirements.txt.

    wheel_cache.py receive --url URL --manifest-json JSON --owner USER --group GROUP FOLDER
        A worker's whole part, in one call: prepares FOLDER, writes the requirements file of the
        manifest (the JSON of ``manifest``, as the coordinator printed it), then, as --owner,
        copies every file the manifest lists from the server into FOLDER/wheels, checking each
        one's sha256 and size while it streams; a file that differs is removed and the command
        fails naming it. URL is http://ADDR:PORT, the server inside the pod (no proxy is used).
        Prints {"files", "bytes"}.

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
import codecs
import grp
import hashlib
import http.server
import ipaddress
import json
import os
import pwd
import re
import shutil
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


def account(owner: str, group: str) -> tuple[int, int]:
    """The uid and gid of a user name and a group name (or a number)."""
    try:
        uid = pwd.getpwnam(owner).pw_uid
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    except KeyError as error:
        raise ManifestError(f"no such user or group: {owner}:{group}") from error
    return uid, gid


def prepare(folder: Path, uid: int, gid: int, with_tool: bool = False) -> Path:
    """Empty the pod's wheel folder and make it again; return its wheels folder (uid's)."""
    if not folder.is_absolute() or os.path.realpath(folder) != str(folder):
        raise ManifestError(f"{folder} is not an absolute path free of symlinks and '..'")
    if folder.exists():
        shutil.rmtree(folder)  # deletes links inside, never follows them
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    wheels = folder / "wheels"
    wheels.mkdir()
    wheels.chmod(0o755)
    os.chown(wheels, uid, gid)
    if with_tool:
        tool = folder / "wheel_cache.py"
        shutil.copyfile(os.path.abspath(__file__), tool)
        tool.chmod(0o644)
    return wheels


def write_requirements(folder: Path, described: dict[str, Any], uid: int, gid: int) -> None:
    """Write the manifest's hashed requirements next to the wheels folder."""
    path = folder / "requirements.txt"
    path.write_text(described["requirements"])
    path.chmod(0o644)
    os.chown(path, uid, gid)


def as_user(uid: int, gid: int, work: Any) -> None:
    """Run work() with only the uid and gid given (in a child process when this one is root).

    What the child imports lazily must be loaded before it gives up root: the interpreter's own
    files need not be readable by the owner (hence the idna codec, which a host name needs).
    """
    if os.geteuid() != 0 or uid == 0:
        work()
        return
    codecs.lookup("idna")  # loaded now, while the interpreter's files are readable
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: give up root for good, then work
        code = 1
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.umask(0o022)
            work()
            code = 0
        except Exception as error:  # noqa: BLE001 - the child reports any error and exits
            print(f"wheel_cache.py receive: {error}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    status = os.waitpid(pid, 0)[1]
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        raise ManifestError("the copy as the wheels' owner failed (its error is above)")


def receive(url: str, described: dict[str, Any], folder: Path, uid: int, gid: int) -> int:
    """A worker's part: prepare the folder, write the requirements, copy and check the files."""
    entries = described["files"]
    wheels = prepare(folder, uid, gid)
    write_requirements(folder, described, uid, gid)
    as_user(uid, gid, lambda: fetch(url, entries, wheels))
    return sum(int(entry["size"]) for entry in entries)


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


def _owner_options(command: argparse.ArgumentParser, required: bool = True) -> None:
    command.add_argument("--owner", required=required, help="the user the wheels belong to")
    command.add_argument("--group", required=required, help="their group (a name or a gid)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ready = commands.add_parser("prepare", help="empty and make again the pod's wheel folder")
    _owner_options(ready)
    ready.add_argument("--with-tool", action="store_true", help="copy this program into it")
    ready.add_argument("folder", type=Path)
    describe = commands.add_parser("manifest", help="hashed requirements for a folder of downloads")
    describe.add_argument("--write", type=Path, help="the pod's wheel folder to write them to")
    _owner_options(describe, required=False)
    describe.add_argument("folder", type=Path)
    take = commands.add_parser("receive", help="a worker's copy of the coordinator's wheels")
    take.add_argument("--url", required=True, help="http://<coordinator>:<port>")
    take.add_argument("--manifest-json", required=True, help="the coordinator's manifest")
    _owner_options(take)
    take.add_argument("folder", type=Path)
    serve = commands.add_parser(
        "serve", help="serve a folder's distributions to the pod's addresses"
    )
    serve.add_argument("--bind", required=True, help="the coordinator's address inside the pod")
    serve.add_argument("--port", required=True, type=int)
    serve.add_argument("--allow", action="append", required=True, help="a pod member's address")
    serve.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command != "serve":
        try:
            print(json.dumps(_run(args)))
        except (ManifestError, OSError, ValueError, KeyError, TypeError) as error:
            print(f"wheel_cache.py {args.command}: {error}", file=sys.stderr)
            return 1
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


def _run(args: argparse.Namespace) -> dict[str, Any]:
    """prepare, manifest and receive: what each prints."""
    if args.command == "manifest":
        described = manifest(args.folder)
        if args.write is not None:
            if args.owner is None or args.group is None:
                raise ManifestError("--write needs --owner and --group")
            write_requirements(args.write, described, *account(args.owner, args.group))
        return described
    uid, gid = account(args.owner, args.group)
    if args.command == "prepare":
        return {"wheels": str(prepare(args.folder, uid, gid, args.with_tool))}
    described = json.loads(args.manifest_json)
    total = receive(args.url, described, args.folder, uid, gid)
    return {"files": len(described["files"]), "bytes": total}


if __name__ == "__main__":
    sys.exit(main())
