"""tools/payload_cache.py: compiled code of Ansible payload zips kept between processes.

Each case runs fresh Python processes, as every Ansible task does, that load the module, count
the compiles it does and import a module from a zip; HOME is a temporary folder. They run with -S
(no site-packages, where make setup installs the same module): only this copy is at work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "tools" / "payload_cache.py"
CHILD = """
import importlib.util, json, sys, traceback
spec = importlib.util.spec_from_file_location("payload_cache", sys.argv[1])
cache = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cache)
compiles = []
real = cache._compile_source
cache._compile_source = lambda path, source: compiles.append(path) or real(path, source)
sys.path.insert(0, sys.argv[2])
import payload_mod
try:
    payload_mod.boom()
except ValueError:
    where = traceback.extract_tb(sys.exc_info()[2])[-1].filename
print(json.dumps({"value": payload_mod.VALUE, "compiles": len(compiles), "where": where}))
"""
SOURCE = """VALUE = {value!r}


def boom():
    def inner():
        raise ValueError("x")

    inner()
"""


def make_zip(folder: Path, name: str, value: str = "one") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("payload_mod.py", SOURCE.format(value=value))
    return path


def load(home: Path, archive: Path, **env: str) -> dict:
    environ = {**os.environ, "HOME": str(home), **env}
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(MODULE), str(archive)],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def uncached(tmp_path: Path) -> int:
    """How many compiles an import from a payload zip takes with the cache turned off."""
    home = tmp_path / "home-off"
    home.mkdir(exist_ok=True)
    archive = make_zip(tmp_path / "ansible_off_payload_x", "ansible_off_payload.zip")
    return load(home, archive, CLOUDTPU_PAYLOAD_CACHE="0")["compiles"]


def entries(home: Path) -> list[Path]:
    folder = home / ".cache" / "cloudtpu-payload-pyc"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_payload_is_compiled_once_then_loaded_under_the_new_payloads_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = make_zip(tmp_path / "ansible_stat_payload_a1", "ansible_stat_payload.zip")
    second = make_zip(tmp_path / "ansible_stat_payload_b2", "ansible_stat_payload.zip")
    # compiled once, though Python 3.11 alone compiles it twice (see the test below)
    where = f"{first}/payload_mod.py"
    assert load(home, first) == {"value": "one", "compiles": 1, "where": where}
    assert len(entries(home)) == 1
    assert (home / ".cache" / "cloudtpu-payload-pyc").stat().st_mode & 0o777 == 0o700
    assert entries(home)[0].stat().st_mode & 0o777 == 0o600
    # the second process compiles nothing; the nested function's traceback names its own zip
    assert load(home, second) == {
        "value": "one",
        "compiles": 0,
        "where": f"{second}/payload_mod.py",
    }


def test_a_changed_source_is_compiled_anew(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "ansible_stat_payload_a1"
    load(home, make_zip(folder, "ansible_stat_payload.zip", "one"))
    changed = load(home, make_zip(folder, "ansible_stat_payload.zip", "two"))
    assert changed["value"] == "two"
    assert changed["compiles"] == 1
    assert len(entries(home)) == 2


def test_other_zips_are_compiled_as_python_does(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    other = make_zip(tmp_path / "lib", "library.zip")
    # Python 3.11 compiles a module from a zip twice (zipimporter.get_filename, then get_code)
    assert load(home, other)["compiles"] == uncached(tmp_path) >= 1
    assert load(home, other)["compiles"] == uncached(tmp_path)
    assert entries(home) == []


@pytest.mark.parametrize("kind", ["group-writable", "symlink", "off"])
def test_an_unsafe_cache_folder_or_the_off_switch_means_no_cache(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    folder = home / ".cache" / "cloudtpu-payload-pyc"
    env = {}
    if kind == "group-writable":
        folder.mkdir()
        folder.chmod(0o770)
    elif kind == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        env["CLOUDTPU_PAYLOAD_CACHE"] = "0"
    archive = make_zip(tmp_path / "ansible_stat_payload_a1", "ansible_stat_payload.zip")
    assert load(home, archive, **env)["compiles"] == uncached(tmp_path)
    assert load(home, archive, **env)["compiles"] == uncached(tmp_path)
    written = tmp_path / "elsewhere" if kind == "symlink" else folder
    assert not written.is_dir() or not any(written.iterdir())


def test_a_broken_entry_is_compiled_again_and_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    archive = make_zip(tmp_path / "ansible_stat_payload_a1", "ansible_stat_payload.zip")
    load(home, archive)
    (entry,) = entries(home)
    entry.write_bytes(b"not marshal data")
    assert load(home, archive) == {
        "value": "one",
        "compiles": 1,
        "where": f"{archive}/payload_mod.py",
    }
    assert load(home, archive)["compiles"] == 0


def test_past_the_limit_the_older_half_is_removed(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("payload_cache_prune", MODULE)
    assert spec and spec.loader
    cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cache)
    try:
        for number in range(12):
            entry = tmp_path / f"entry{number:02d}"
            entry.write_bytes(b"x")
            os.utime(entry, (1000 + number, 1000 + number))
        cache.prune(str(tmp_path), limit=12)
        assert len(list(tmp_path.iterdir())) == 12
        (tmp_path / "entry12").write_bytes(b"x")
        cache.prune(str(tmp_path), limit=12)
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"entry{n:02d}" for n in range(7, 13)]
    finally:
        import zipimport

        zipimport._compile_source = cache._compile_source
        cache._MetaHook.remove()
