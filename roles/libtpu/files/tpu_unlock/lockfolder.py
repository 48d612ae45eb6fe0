"""Which folders can be trusted, and the safe removal of libtpu's lock files and log folder.

/tmp is writable by every user, so nothing there is trusted by name: a lock path must sit
directly in the lock folder and carry libtpu's name, the entry must be a regular file (the log
folder a folder) of an expected owner, and removal goes through a descriptor of the folder,
checked again just before unlinkat.
"""

from __future__ import annotations

import argparse
import os
import stat

from . import FIRST_REGULAR_UID, LOCK_NAME, LOG_NAME, NOBODY_UID, Report, user_name

O_PATH = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK)


def unsafe_folder(path: str, *, sticky_ok: bool) -> str:
    """Why someone other than root (or the caller) could change `path`; '' when nobody can.

    Every folder from / down is looked at without following links. A folder writable by others
    is only accepted when it is sticky (as /tmp) and `sticky_ok`, or on the way down to `path`.
    """
    if not os.path.isabs(path) or os.path.normpath(path) != path:
        return f"{path} is not an absolute, normalised path"
    trusted = {0, os.geteuid()}
    parts = [p for p in path.split("/") if p]
    for depth in range(len(parts) + 1):
        current = "/" + "/".join(parts[:depth])
        try:
            st = os.lstat(current)
        except OSError as exc:
            return f"{current}: {exc.strerror}"
        if stat.S_ISLNK(st.st_mode):
            return f"{current} is a symbolic link"
        if not stat.S_ISDIR(st.st_mode):
            return f"{current} is not a folder"
        if st.st_uid not in trusted:
            return f"{current} belongs to {user_name(st.st_uid)}, not root"
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        last = depth == len(parts)
        if writable and not (st.st_mode & stat.S_ISVTX and (sticky_ok or not last)):
            return f"{current} is writable by other users"
    return ""


class LockFolder:
    """The folder of libtpu's lock files (/tmp), opened once; every name is looked up in it."""

    def __init__(self, path: str, owners: set[int] | None) -> None:
        self.path = path
        self.owners = owners
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self.fd)

    def owner_ok(self, uid: int) -> bool:
        if self.owners is not None:
            return uid == 0 or uid in self.owners
        return uid == 0 or FIRST_REGULAR_UID <= uid != NOBODY_UID

    def check(self, path: str, *, folder: bool, report: Report) -> os.stat_result | None:
        """The lstat of a lock file (or of the log folder) that is safe to remove, else None."""
        name = os.path.basename(path)
        try:
            st = os.lstat(name, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        want = stat.S_ISDIR if folder else stat.S_ISREG
        if not want(st.st_mode):
            kind = _kind(st.st_mode)
            report.refuse(path, f"is a {kind}, not a {'folder' if folder else 'regular file'}")
        elif not folder and st.st_nlink != 1:
            report.refuse(path, f"has {st.st_nlink} hard links; it may be another file's name")
        elif not self.owner_ok(st.st_uid):
            report.refuse(path, f"belongs to {user_name(st.st_uid)}, not an expected owner")
        else:
            return st
        return None

    def _open(self, name: str, flags: int) -> int:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)

    def remove(self, path: str, expected: os.stat_result, dry_run: bool, report: Report) -> None:
        """Remove a checked entry, if it is still the very file (or folder) that was checked."""
        name = os.path.basename(path)
        folder = stat.S_ISDIR(expected.st_mode)
        try:
            fd = self._open(name, os.O_RDONLY | os.O_DIRECTORY if folder else O_PATH)
        except FileNotFoundError:
            return
        except OSError as exc:
            report.refuse(path, f"changed since it was checked ({exc.strerror}); left alone")
            return
        try:
            opened = os.fstat(fd)
            if not _same(opened, expected):
                report.refuse(path, "was replaced since it was checked; left alone")
                return
            if dry_run:
                report.removed.append(path)
                return
            if folder:
                _clear(fd, opened.st_dev)
            before_unlink(path)
            if not _same(os.lstat(name, dir_fd=self.fd), opened):
                report.refuse(path, "was replaced just before removal; left alone")
                return
            if folder:
                os.rmdir(name, dir_fd=self.fd)
            else:
                os.unlink(name, dir_fd=self.fd)
            report.removed.append(path)
        except FileNotFoundError:
            pass  # removed by someone else meanwhile: gone is what was wanted
        except OSError as exc:
            report.errors.append(f"cannot remove {path}: {exc.strerror or exc}")
        finally:
            os.close(fd)


def before_unlink(path: str) -> None:
    """Called between the last check and the removal (tests swap the file here)."""


def _same(one: os.stat_result, other: os.stat_result) -> bool:
    return (one.st_dev, one.st_ino, stat.S_IFMT(one.st_mode)) == (
        other.st_dev,
        other.st_ino,
        stat.S_IFMT(other.st_mode),
    )


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISLNK: "symbolic link",
        stat.S_ISFIFO: "fifo",
        stat.S_ISSOCK: "socket",
        stat.S_ISCHR: "character device",
        stat.S_ISBLK: "block device",
        stat.S_ISDIR: "folder",
        stat.S_ISREG: "regular file",
    }
    return next((kind for test, kind in kinds.items() if test(mode)), "special file")


def _clear(fd: int, dev: int) -> None:
    """Empty the open folder `fd` without following links or leaving its file system."""
    with os.scandir(fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if not is_dir:
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                pass  # libtpu's logs are written by its users; one went meanwhile
            continue
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        try:
            if os.fstat(sub).st_dev != dev:
                raise OSError(f"{name} is another file system mounted in the log folder")
            _clear(sub, dev)
        finally:
            os.close(sub)
        os.rmdir(name, dir_fd=fd)


def lock_paths(args: argparse.Namespace, report: Report) -> list[tuple[str, bool]]:
    """(path, is the log folder) for every lock path that follows the naming rules."""
    wanted = [(path, False) for path in args.locks]
    if args.log_dir and not args.keep_logs:
        wanted.append((args.log_dir, True))
    accepted = []
    for path, folder in wanted:
        clean = os.path.normpath(path) if os.path.isabs(path) else ""
        pattern = LOG_NAME if folder else LOCK_NAME
        example = "tpu_logs" if folder else "libtpu_lockfile"
        if clean.rstrip("/") != path.rstrip("/") or os.path.dirname(clean) != args.tmp_dir:
            report.refuse(path, f"must be directly in {args.tmp_dir}, as {args.tmp_dir}/{example}")
        elif not pattern.match(os.path.basename(clean)):
            report.refuse(path, f"is not a libtpu name (allowed: {pattern.pattern})")
        else:
            accepted.append((clean, folder))
    return accepted
