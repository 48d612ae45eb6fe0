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

The same folder keeps one more thing every Ansible process makes again from the same bytes: the
routing table of a collection's ``meta/runtime.yml``, above all ansible-core's own
(``ansible_builtin_runtime.yml``, 370 kB: about half a CPU-second of YAML parsing at the start of
every ``ansible-playbook``, ``ansible-inventory`` and ``ansible-lint``). ansible-core reads it
through ``ansible.utils.collection_loader._collection_meta._meta_yml_to_dict``, a function it
names as one to replace with a caching implementation. Once that module is imported, its
function is wrapped: a table of more than ROUTING_MIN bytes is kept as JSON
(``routing-<sha256>.json``; the key covers the YAML text and PyYAML's version), which holds
exactly what that parser gives (strings, lists and mappings), and is read from there next time.
A table that would not come back the same from JSON is not kept.
"""

import os
import sys
import zipimport

PAYLOAD_MARK = "_payload.zip"
FOLDER_NAME = "cloudtpu-payload-pyc"
# About 200 files make one ansible-core version's payloads; this keeps a dozen versions.
MAX_ENTRIES = 4000
# Smaller routing tables (a collection's few redirects) parse faster than a cache entry is read.
ROUTING_MIN = 16384
META_MODULE = "ansible.utils.collection_loader._collection_meta"
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
    if _write_entry(entry, marshal.dumps(code)):
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


def _write_entry(entry, data):
    """Write a cache entry (0600) in one step: a reader never sees half of it."""
    part = f"{entry}.{os.getpid()}.part"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(part, entry)
    except OSError:
        try:
            os.unlink(part)
        except OSError:
            pass
        return False
    return True


def cached_routing(parse):
    """A _meta_yml_to_dict that keeps the tables parse makes of large runtime.yml files."""

    def meta_yml_to_dict(yaml_string_data, content_id):
        data = yaml_string_data
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        folder = isinstance(data, bytes) and len(data) > ROUTING_MIN and cache_folder()
        if not folder:
            return parse(yaml_string_data, content_id)
        import hashlib
        import json

        import yaml

        digest = hashlib.sha256(f"routing\0{yaml.__version__}\0".encode())
        digest.update(data)
        entry = os.path.join(folder, f"routing-{digest.hexdigest()}.json")
        try:
            with open(entry, "rb") as cached:
                table = json.loads(cached.read())
            if isinstance(table, dict):
                return table
        except (OSError, ValueError):
            pass
        table = parse(yaml_string_data, content_id)
        try:
            text = json.dumps(table, ensure_ascii=False)
            same = json.loads(text) == table
        except (TypeError, ValueError):
            same = False
        if same and _write_entry(entry, text.encode("utf-8", "surrogatepass")):
            prune(folder)
        return table

    meta_yml_to_dict.__wrapped__ = parse
    return meta_yml_to_dict


class _MetaHook:
    """Wraps _meta_yml_to_dict as its module is first imported (before the collection finder
    takes the function from it), then steps aside."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != META_MODULE:
            return None
        import importlib.machinery

        cls.remove()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            parse = getattr(module, "_meta_yml_to_dict", None)
            if callable(parse) and cache_folder():
                module._meta_yml_to_dict = cached_routing(parse)

        spec.loader.exec_module = exec_module
        return spec

    @classmethod
    def remove(cls):
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)


zipimport._compile_source = cached_compile
if META_MODULE not in sys.modules:
    sys.meta_path.insert(0, _MetaHook)
