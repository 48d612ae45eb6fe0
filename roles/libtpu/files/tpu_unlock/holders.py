"""The TPU devices and the processes that hold them, found by reading /proc; ending them.

A holder is a process with an open descriptor on a TPU device or a lock file, matched by what
the kernel says the descriptor is (its device number, or device and inode), never by a path
name. Only processes that hold a TPU device are ever signalled (cli.py decides which).
"""

from __future__ import annotations

import glob
import os
import signal
import stat
import time

from . import Holder, Report, user_name
from .lockfolder import unsafe_folder

# Memory devices (/dev/null, /dev/zero, /dev/mem...), terminals and pseudo terminals.
NEVER_TPU_MAJORS = frozenset({1, 4, 5, *range(136, 144)})

# After SIGKILL, how long to wait for the kernel to tear a process down.
KILL_WAIT = 5.0
POLL = 0.1


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def process_uid(proc_dir: str) -> int:
    """Real uid of a process, from its status file (owner of its /proc folder as fallback)."""
    try:
        for line in _read(os.path.join(proc_dir, "status")).splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return os.stat(proc_dir).st_uid


def process_command(proc_dir: str) -> str:
    """Command line of a process; its name in brackets when the command line is empty."""
    try:
        args = _read(os.path.join(proc_dir, "cmdline")).split("\0")
        command = " ".join(arg for arg in args if arg)
        if command:
            # One line, and no terminal control sequences from another user's arguments.
            return "".join(char if char.isprintable() else " " for char in command)
    except OSError:
        pass
    try:
        return "[" + _read(os.path.join(proc_dir, "comm")).strip() + "]"
    except OSError:
        return "?"


def _stat_fields(proc_dir: str) -> list[str]:
    try:
        text = _read(os.path.join(proc_dir, "stat"))
    except OSError:
        return []
    # The command name (field 2) is in parentheses and may contain spaces.
    return text[text.rfind(")") + 2 :].split()


def process_start_time(proc_dir: str) -> str:
    """Start time of a process (stat field 22), to notice a reused pid; empty if unknown."""
    fields = _stat_fields(proc_dir)
    return fields[19] if len(fields) > 19 else ""


def process_state(proc_dir: str) -> str:
    """One-letter process state (R, S, Z, ...); empty when the process is gone."""
    fields = _stat_fields(proc_dir)
    return fields[0] if fields else ""


def identity(st: os.stat_result) -> tuple:
    """What an open file is, as the kernel sees it: a device number or a device and inode."""
    if stat.S_ISCHR(st.st_mode):
        return ("chr", st.st_rdev)
    return ("inode", st.st_dev, st.st_ino)


def find_devices(patterns: list[str], report: Report) -> dict[tuple, str]:
    """TPU device files matched by the glob patterns: identity -> path. Others are refused."""
    found: dict[tuple, str] = {}
    paths: set[str] = set()
    for pattern in patterns:
        if not os.path.isabs(pattern):
            report.refuse(pattern, "device patterns must be absolute paths")
            continue
        paths.update(glob.glob(pattern))
    for path in sorted(paths):
        why = unsafe_folder(os.path.dirname(path), sticky_ok=False)
        if why:
            report.refuse(path, f"not a trusted device folder: {why}")
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue  # gone meanwhile
        if stat.S_ISDIR(st.st_mode):
            continue  # a folder the pattern matches (as /dev/accel/ of newer kernels) is no device
        if stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) in NEVER_TPU_MAJORS:
            report.refuse(path, "a memory or terminal device (as /dev/null) is never a TPU")
        elif stat.S_ISCHR(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink == 1):
            found[identity(st)] = path
        else:
            report.refuse(path, "not a character device (links are never followed)")
    report.devices = sorted(found.values())
    return found


def worth_a_look(target: str, folders: set[str]) -> bool:
    """Whether an open file (its /proc/<pid>/fd link) may be a device or a lock file at all.

    Only files in /dev or in the watched folders are stat()ed, so that a file on a network
    mount that does not answer never blocks the scan; sockets, pipes and the like are skipped.
    Whether the file IS a watched one is decided by its identity, never by this name.
    """
    if not target.startswith("/"):
        return False
    if target.endswith(" (deleted)"):
        target = target[: -len(" (deleted)")]
    return target.startswith("/dev/") or os.path.dirname(target) in folders


def find_holders(
    proc_root: str, watched: dict[tuple, str], devices: dict[tuple, str], skip: set[int]
) -> tuple[list[Holder], list[int]]:
    """Processes with a watched file open, and the pids whose open files could not be read.

    Each /proc/<pid>/fd/<n> that may matter is stat()ed: the kernel answers for the open file
    itself, so a name planted in /tmp cannot make an unrelated process look like a holder.
    """
    folders = {os.path.dirname(path) for path in watched.values()}
    holders: list[Holder] = []
    unreadable: list[int] = []
    try:
        entries = os.listdir(proc_root)
    except OSError as exc:
        raise SystemExit(f"tpu-unlock: cannot read {proc_root}: {exc.strerror}") from exc
    for entry in sorted(entries, key=lambda name: (len(name), name)):
        if not entry.isdigit() or int(entry) in skip:
            continue
        proc_dir = os.path.join(proc_root, entry)
        fd_dir = os.path.join(proc_dir, "fd")
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            unreadable.append(int(entry))
            continue
        except OSError:
            continue  # the process ended meanwhile, or is a kernel thread without fds
        held: set[str] = set()
        blind = False
        for fd in fds:
            link = os.path.join(fd_dir, fd)
            try:
                if not worth_a_look(os.readlink(link), folders):
                    continue
                key = identity(os.stat(link))
            except PermissionError:
                # Listing is allowed but looking at the descriptors needs ptrace access (root
                # without CAP_SYS_PTRACE, as in some containers): this process cannot be ruled out.
                blind = True
                break
            except OSError:
                continue  # the descriptor was closed meanwhile
            if key in watched:
                held.add(watched[key])
        if blind:
            unreadable.append(int(entry))
            continue
        if not held:
            continue
        try:
            uid = process_uid(proc_dir)
        except OSError:
            continue
        holders.append(
            Holder(
                pid=int(entry),
                uid=uid,
                user=user_name(uid),
                command=process_command(proc_dir),
                holds=sorted(held),
                start_time=process_start_time(proc_dir),
                device=bool(held & set(devices.values())),
            )
        )
    return holders, unreadable


def _gone(proc_root: str, holder: Holder) -> bool:
    proc_dir = os.path.join(proc_root, str(holder.pid))
    state = process_state(proc_dir)
    if state in ("", "Z", "X"):
        return True
    return bool(holder.start_time) and process_start_time(proc_dir) != holder.start_time


def _signal_all(proc_root: str, holders: list[Holder], sig: int, report: Report) -> None:
    for holder in holders:
        if _gone(proc_root, holder):
            continue
        try:
            os.kill(holder.pid, sig)
        except ProcessLookupError:
            continue
        except PermissionError:
            report.errors.append(f"not allowed to signal pid {holder.pid} ({holder.user})")
            continue
        report.killed.append(
            {
                "pid": holder.pid,
                "user": holder.user,
                "command": holder.command,
                "signal": signal.Signals(sig).name,
            }
        )


def _wait_gone(proc_root: str, holders: list[Holder], timeout: float) -> list[Holder]:
    deadline = time.monotonic() + timeout
    alive = [h for h in holders if not _gone(proc_root, h)]
    while alive and time.monotonic() < deadline:
        time.sleep(POLL)
        alive = [h for h in alive if not _gone(proc_root, h)]
    return alive


def kill_holders(proc_root: str, targets: list[Holder], grace: float, report: Report) -> None:
    """TERM the targets, KILL those still alive after `grace` seconds, wait for them to go."""
    _signal_all(proc_root, targets, signal.SIGTERM, report)
    survivors = _wait_gone(proc_root, targets, grace)
    if survivors:
        _signal_all(proc_root, survivors, signal.SIGKILL, report)
        for holder in _wait_gone(proc_root, survivors, KILL_WAIT):
            report.errors.append(f"pid {holder.pid} ({holder.user}) survived SIGKILL")
