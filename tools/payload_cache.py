"""Compiled code of Ansible's module payloads, kept between tasks.

Every Ansible task runs a fresh Python that imports the module and its module_utils from a zip
file (``.../ansible_<module>_payload.zip``); Python never keeps the compiled code of a zip, and
3.11 compiles each file of it twice (zipimporter.get_filename, then get_code). So every task
compiles the same ~100 files again: about a third of a task's CPU time. On a real TPU VM that is
a moment of one of many cores; in this project's tests every emulated worker, and the control
machine's own localhost tasks (the TPU API modules), share two CPUs, thousands of times a run.

Installed by ``make setup`` into .venv (localhost tasks) and by tools/image/build.sh into the
worker image's system Python (``dist-packages``), each time with a ``.pth`` line that imports
it. It wraps the standard library's ``zipimport._compile_source`` for those payload zips only:
the code object is kept in ``~/.cache/cloudtpu-payload-pyc/<sha256>`` (the key covers Python's
bytecode magic number, the path inside the zip and the source text, so a changed file or another
Python is compiled anew) and loaded from there next time, its file names pointed at the current
payload. The same source runs, from the same zip; only the compiling is skipped.

The cache folder is the user's own: created 0700, used only when it is a real folder owned by
the user and writable by nobody else; entries are 0600. Anything unexpected (no home, a full
disk, a broken entry) falls back to compiling. Past MAX_ENTRIES entries the older half is
removed. ``CLOUDTPU_PAYLOAD_CACHE=0`` turns it off (the benchmark's baseline).
"""

import os
import zipimport

PAYLOAD_MARK = "_payload.zip"
FOLDER_NAME = "cloudtpu-payload-pyc"
# About 200 files make one ansible-core version's payloads; this keeps a dozen versions.
MAX_ENTRIES = 4000
_compile_source = zipimport._compile_source
_folder_cache = []


def cache_folder():
    """The user's cache folder, or None when it is not safe to use (decided once a process)."""
    if not _folder_cache:
        _folder_cache.append(_safe_folder())
    return _folder_cache[0]


def _safe_folder():
    import stat

    if os.environ.get("CLOUDTPU_PAYLOAD_CACHE", "1") == "0":
        return None
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return None
    path = os.path.join(home, ".cache", FOLDER_NAME)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    own = info.st_uid == os.geteuid()
    if not stat.S_ISDIR(info.st_mode) or not own or info.st_mode & 0o022:
        return None
    return path


def retarget(code, filename):
    """The code object and every one nested in it, with co_filename set to filename."""
    consts = tuple(
        retarget(const, filename) if isinstance(const, type(code)) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def cached_compile(pathname, source):
    """zipimport's compile step, kept between runs for files of an Ansible payload zip."""
    folder = PAYLOAD_MARK in pathname and cache_folder()
    if not folder:
        return _compile_source(pathname, source)
    import hashlib
    import importlib.util
    import marshal

    inner = pathname.split(PAYLOAD_MARK, 1)[1]
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    digest.update(inner.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(source)
    entry = os.path.join(folder, digest.hexdigest())
    try:
        with open(entry, "rb") as cached:
            # the user's own folder, writable by nobody else: trusted as __pycache__ is
            return retarget(marshal.loads(cached.read()), pathname)  # noqa: S302
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = _compile_source(pathname, source)
    part = f"{entry}.{os.getpid()}.part"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(marshal.dumps(code))
        os.replace(part, entry)
    except OSError:
        try:
            os.unlink(part)
        except OSError:
            pass
    else:
        prune(folder)
    return code


def prune(folder, limit=None):
    """Past limit entries (MAX_ENTRIES), remove the older half (by modification time)."""
    limit = MAX_ENTRIES if limit is None else limit
    try:
        names = os.listdir(folder)
        if len(names) <= limit:
            return
        dated = sorted((os.lstat(os.path.join(folder, n)).st_mtime, n) for n in names)
        for _, name in dated[: len(dated) - limit // 2]:
            os.unlink(os.path.join(folder, name))
    except OSError:
        pass


zipimport._compile_source = cached_compile
