"""The pod's wheel cache (roles/python/files/wheel_cache.py): manifest and server.

Exercised: the hashed requirements file made from a folder of wheels and sdists (and the
folders it refuses), pip installing from that file with --require-hashes and refusing a file
whose bytes changed, and the server answering only the addresses it is given, only for the
distribution files of its folder. The two-worker round trip runs in the demo pod
(bench/framework/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import urllib.error
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "roles" / "python" / "files" / "wheel_cache.py"
_spec = importlib.util.spec_from_file_location("wheel_cache", SCRIPT)
assert _spec and _spec.loader
cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cache)


def make_wheel(folder: Path, name: str, version: str, body: str = "VALUE = 1\n") -> Path:
    """A minimal pure-Python wheel that pip installs."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}.py": body,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={_b64(hashlib.sha256(text.encode()).digest())},{len(text.encode())}\n"
        for path, text in files.items()
    )
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def _b64(digest: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_sdist(folder: Path, name: str, version: str) -> Path:
    path = folder / f"{name}-{version}.tar.gz"
    data = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(f"{name}-{version}/PKG-INFO")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def test_manifest_lists_each_distribution_with_its_hash(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "Demo_Pkg", "1.2.0")
    sdist = make_sdist(tmp_path, "other", "0.3")
    (tmp_path / "notes.txt").write_text("not a distribution")
    result = cache.manifest(tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert [f["file"] for f in result["files"]] == sorted([wheel.name, sdist.name]), result
    assert f"demo-pkg==1.2.0 --hash=sha256:{digest}" in result["requirements"].splitlines(), result
    assert any(
        line.startswith("other==0.3 --hash=sha256:") for line in result["requirements"].splitlines()
    )


def test_manifest_joins_the_hashes_of_one_release(tmp_path: Path) -> None:
    make_wheel(tmp_path, "demo", "1.0")
    make_sdist(tmp_path, "demo", "1.0")
    lines = cache.manifest(tmp_path)["requirements"].splitlines()
    assert len(lines) == 1 and lines[0].count("--hash=sha256:") == 2, lines


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda d: None, "holds no distribution files"),
        (
            lambda d: (make_wheel(d, "demo", "1.0"), make_wheel(d, "demo", "2.0")),
            "two versions of demo",
        ),
        (lambda d: (d / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip"), "cannot be read"),
    ],
    ids=["empty", "two-versions", "not-a-zip"],
)
def test_manifest_refuses_folders_it_cannot_describe(tmp_path: Path, setup, words: str) -> None:
    setup(tmp_path)
    with pytest.raises(cache.ManifestError, match=words):
        cache.manifest(tmp_path)


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(folder)
    return folder / "bin" / "python"


def test_pip_installs_from_the_manifest_and_refuses_changed_bytes(
    tmp_path: Path, pip_venv: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "cachedemo", "1.0")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(cache.manifest(wheels)["requirements"])
    argv = [str(pip_venv), "-m", "pip", "install", "--no-index", "--find-links", str(wheels)]
    argv += ["--require-hashes", "-r", str(requirements), "--disable-pip-version-check"]
    good = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert good.returncode == 0, good.stdout + good.stderr
    subprocess.run([str(pip_venv), "-m", "pip", "uninstall", "-y", "cachedemo"], check=True)
    # The same name and version with other bytes, as a tampering server would give.
    make_wheel(wheels, "cachedemo", "1.0", body="VALUE = 2\n")
    bad = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "HASHES" in bad.stdout + bad.stderr, bad.stdout + bad.stderr


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    make_wheel(tmp_path, "demo", "1.0")
    (tmp_path / "secret.txt").write_text("not served")
    allow = request.param
    httpd = cache.make_server("127.0.0.1", 0, tmp_path, allow)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", tmp_path
    finally:
        httpd.shutdown()
        httpd.server_close()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/demo-1.0-py3-none-any.whl", 200),
        ("/", 404),
        ("/secret.txt", 404),
        ("/../wheel_cache.py", 404),
        ("/missing-1.0-py3-none-any.whl", 404),
    ],
)
def test_server_gives_only_distribution_files(
    server: tuple[str, Path], path: str, code: int
) -> None:
    base, _ = server
    assert status(base + path) == code


@pytest.mark.parametrize("server", [["10.0.0.2", "10.0.0.3"]], indirect=True)
def test_server_refuses_addresses_outside_the_pod(server: tuple[str, Path]) -> None:
    base, _ = server
    assert status(base + "/demo-1.0-py3-none-any.whl") == 403


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_served_bytes_match_the_manifest(server: tuple[str, Path]) -> None:
    base, folder = server
    entry = cache.manifest(folder)["files"][0]
    url = f"{base}/{entry['file']}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read()
    assert hashlib.sha256(body).hexdigest() == entry["sha256"] and len(body) == entry["size"]


def test_command_line_reports_a_bad_folder(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "manifest", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1 and "holds no distribution files" in result.stderr, result.stderr


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_fetch_copies_and_checks_every_file(server: tuple[str, Path], tmp_path_factory) -> None:
    base, folder = server
    entries = cache.manifest(folder)["files"]
    dest = tmp_path_factory.mktemp("worker")
    assert cache.fetch(base, entries, dest) == sum(e["size"] for e in entries)
    for entry in entries:
        copied = dest / entry["file"]
        assert hashlib.sha256(copied.read_bytes()).hexdigest() == entry["sha256"], entry


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_fetch_refuses_a_file_that_changed(server: tuple[str, Path], tmp_path_factory) -> None:
    base, folder = server
    entries = cache.manifest(folder)["files"]
    make_wheel(folder, "demo", "1.0", body="VALUE = 'changed on the server'\n")
    dest = tmp_path_factory.mktemp("worker")
    with pytest.raises(cache.ManifestError, match=re.escape("demo-1.0-py3-none-any.whl: got")):
        cache.fetch(base, entries, dest)
    assert list(dest.iterdir()) == [], "a file that failed its check must not stay behind"


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_fetch_names_a_missing_file(server: tuple[str, Path], tmp_path_factory) -> None:
    base, _ = server
    entries = [{"file": "gone-1.0-py3-none-any.whl", "sha256": "0" * 64, "size": 1}]
    with pytest.raises(
        cache.ManifestError, match=re.escape("gone-1.0-py3-none-any.whl: HTTP Error 404")
    ):
        cache.fetch(base, entries, tmp_path_factory.mktemp("worker"))


# A worker's one-call part. As root (CI, the workers) the copy runs as `nobody`, in a folder the
# unprivileged child can reach; as another user, as that user (no change of user to test).
@pytest.fixture
def worker_folder() -> Iterator[tuple[Path, str, int]]:
    if os.geteuid() == 0:
        owner = "nobody"
    else:
        owner = pwd.getpwuid(os.geteuid()).pw_name
    base = Path(tempfile.mkdtemp(prefix="wheel-cache-worker-"))
    base.chmod(0o755)
    try:
        yield base / "cache" / "wheels-of-the-pod", owner, pwd.getpwnam(owner).pw_uid
    finally:
        shutil.rmtree(base)


def run_tool(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, check=False
    )


def receive_argv(base: str, folder: Path, owner: str, described: dict) -> list[str]:
    group = str(pwd.getpwnam(owner).pw_gid)
    return [
        "receive", f"--url={base}", f"--manifest-json={json.dumps(described)}",
        f"--owner={owner}", f"--group={group}", str(folder),
    ]  # fmt: skip


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_receive_remakes_the_folder_and_copies_as_the_owner(
    server: tuple[str, Path], worker_folder: tuple[Path, str, int]
) -> None:
    base, served = server
    folder, owner, uid = worker_folder
    described = cache.manifest(served)
    # Leftovers of an interrupted run, and a link to a file outside that must not be followed.
    outside = folder.parent.parent / "outside.txt"
    outside.write_text("keep me")
    (folder / "wheels").mkdir(parents=True)
    (folder / "wheels" / "stale-0.1-py3-none-any.whl").write_text("old")
    (folder / "wheels" / "link.whl").symlink_to(outside)
    result = run_tool(*receive_argv(base, folder, owner, described))
    assert result.returncode == 0, result.stderr
    entry = described["files"][0]
    assert json.loads(result.stdout) == {"files": 1, "bytes": entry["size"]}
    assert sorted(p.name for p in (folder / "wheels").iterdir()) == [entry["file"]]
    copied = folder / "wheels" / entry["file"]
    assert hashlib.sha256(copied.read_bytes()).hexdigest() == entry["sha256"]
    assert copied.stat().st_uid == uid and (folder / "wheels").stat().st_uid == uid
    assert (folder / "requirements.txt").read_text() == described["requirements"]
    assert (folder / "requirements.txt").stat().st_uid == uid
    assert folder.stat().st_uid == os.geteuid(), "the folder itself stays the caller's (root's)"
    assert outside.read_text() == "keep me"


@pytest.mark.parametrize("server", [["127.0.0.1"]], indirect=True)
def test_receive_fails_on_changed_bytes_and_keeps_no_copy(
    server: tuple[str, Path], worker_folder: tuple[Path, str, int]
) -> None:
    base, served = server
    folder, owner, _ = worker_folder
    described = cache.manifest(served)
    make_wheel(served, "demo", "1.0", body="VALUE = 'changed on the server'\n")
    result = run_tool(*receive_argv(base, folder, owner, described))
    assert result.returncode == 1, result.stdout
    assert "demo-1.0-py3-none-any.whl: got" in result.stderr, result.stderr
    assert list((folder / "wheels").iterdir()) == []


def test_receive_refuses_a_folder_reached_through_a_symlink(
    worker_folder: tuple[Path, str, int],
) -> None:
    folder, owner, _ = worker_folder
    target = folder.parent / "elsewhere"
    target.mkdir(parents=True)
    (target / "precious.txt").write_text("keep me")
    link = folder.parent / "link"
    link.symlink_to(target)
    described = {"files": [], "requirements": ""}
    result = run_tool(*receive_argv("http://127.0.0.1:9", link, owner, described))
    assert result.returncode == 1 and "free of symlinks" in result.stderr, result.stderr
    assert [p.name for p in target.iterdir()] == ["precious.txt"]


def test_prepare_puts_the_tool_in_the_folder(worker_folder: tuple[Path, str, int]) -> None:
    folder, owner, uid = worker_folder
    group = str(pwd.getpwnam(owner).pw_gid)
    result = run_tool("prepare", "--with-tool", f"--owner={owner}", f"--group={group}", str(folder))
    assert result.returncode == 0, result.stderr
    assert (folder / "wheel_cache.py").read_bytes() == SCRIPT.read_bytes()
    assert list((folder / "wheels").iterdir()) == [] and (folder / "wheels").stat().st_uid == uid


def test_an_unknown_owner_is_named(worker_folder: tuple[Path, str, int]) -> None:
    folder, _, _ = worker_folder
    result = run_tool("prepare", "--owner=no-such-user-here", "--group=0", str(folder))
    assert result.returncode == 1 and "no-such-user-here" in result.stderr, result.stderr
    assert not folder.exists()
