"""tpu-unlock's command line: the options, the decision (find, end, remove) and the report."""

from __future__ import annotations

import argparse
import json
import os
import pwd
import sys

from . import (
    DEFAULT_DEV_ROOT,
    DEFAULT_DEVICE_GLOBS,
    DEFAULT_GRACE,
    DEFAULT_LOCKS,
    DEFAULT_LOG_DIR,
    DEFAULT_PROC,
    DEFAULT_TMP,
    DEVICE_FAMILIES,
    EXIT_ERROR,
    EXIT_FREE,
    EXIT_HELD,
    EXIT_REFUSED,
    EXIT_UNKNOWN,
    FIRST_REGULAR_UID,
    Holder,
    Report,
)
from .holders import find_devices, find_holders, identity, kill_holders
from .lockfolder import LockFolder, lock_paths, unsafe_folder


def _targets(holders: list[Holder], users: list[str], report: Report) -> list[Holder]:
    never = {1, os.getpid(), os.getppid()}
    wanted = set(users)
    targets = []
    for holder in holders:
        if holder.pid in never or (wanted and not {holder.user, str(holder.uid)} & wanted):
            continue
        if holder.device:
            targets.append(holder)
        else:
            report.refused.append(
                {"pid": holder.pid, "reason": "holds no TPU device (only a lock file); not ended"}
            )
    return targets


def unlock(args: argparse.Namespace) -> Report:
    """Find the holders, optionally end them, and remove the locks when nobody holds the TPU."""
    report = Report(dry_run=args.dry_run)
    devices = find_devices(args.device_globs, report)
    device_refused = bool(report.refused)
    kill_refused = False
    why = unsafe_folder(args.tmp_dir, sticky_ok=True)
    folder = None if why else LockFolder(args.tmp_dir, args.owner_uids)
    if why:
        report.refuse(args.tmp_dir, f"not a safe lock folder: {why}")
    candidates: dict[str, os.stat_result] = {}
    watched = dict(devices)
    try:
        for path, is_log in lock_paths(args, report) if folder else []:
            checked = folder.check(path, folder=is_log, report=report)
            if checked is not None:
                candidates[path] = checked
                if not is_log:
                    watched[identity(checked)] = path
        # pid 1 (init) never holds a TPU and is never signalled; in some sandboxes even root
        # cannot read its descriptors, which would otherwise make every run inconclusive.
        skip = {1, os.getpid()}
        holders, report.unreadable = find_holders(args.proc, watched, devices, skip)
        report.holders = holders
        remaining = holders
        if holders and args.kill and device_refused:
            # A device file that cannot be trusted may stand for anything: nobody is signalled.
            kill_refused = True
        elif holders and args.kill:
            targets = _targets(holders, args.users, report)
            if args.dry_run:
                report.killed = [
                    {"pid": h.pid, "user": h.user, "command": h.command, "signal": "TERM"}
                    for h in targets
                ]
                remaining = [h for h in holders if h not in targets]
            elif targets:
                kill_holders(args.proc, targets, args.grace, report)
                remaining, report.unreadable = find_holders(args.proc, watched, devices, skip)
        _finish(report, folder, candidates, remaining, device_refused, args)
        if kill_refused:
            report.message += "; --kill ignored: a file the device glob matched was refused"
            report.exit_code = max(report.exit_code, EXIT_REFUSED)
    finally:
        if folder is not None:
            folder.close()
    return report


def _finish(
    report: Report,
    folder: LockFolder | None,
    candidates: dict[str, os.stat_result],
    remaining: list[Holder],
    device_refused: bool,
    args: argparse.Namespace,
) -> None:
    """Remove the checked locks when nothing holds the TPU; set the message and exit code."""
    if remaining:
        report.kept = list(candidates)
        report.exit_code = EXIT_HELD
        who = ", ".join(f"pid {h.pid} ({h.user})" for h in remaining)
        report.message = f"the TPU is held by {who}; locks kept"
        if not args.kill:
            report.message += " (stop the process, or run tpu-unlock --kill)"
    elif report.unreadable:
        report.kept = list(candidates)
        report.exit_code = EXIT_UNKNOWN
        report.message = (
            f"{len(report.unreadable)} processes could not be inspected; locks kept "
            "(run as root: sudo tpu-unlock)"
        )
    elif device_refused or folder is None:
        report.kept = list(candidates)
        report.message = "some device files or the lock folder cannot be trusted; locks kept"
    else:
        for path, checked in candidates.items():
            folder.remove(path, checked, args.dry_run, report)
        verb = "would remove" if args.dry_run else "removed"
        report.message = (
            f"the TPU is free; {verb} {', '.join(report.removed)}"
            if report.removed
            else "the TPU is free; no stale locks"
        )
    paths_refused = [r for r in report.refused if "path" in r]
    if paths_refused:
        if report.exit_code == EXIT_FREE:
            report.exit_code = EXIT_REFUSED
        report.message += "; refused: " + "; ".join(
            f"{r['path']} {r['reason']}" for r in paths_refused
        )
    if report.errors:
        report.exit_code = EXIT_ERROR
        report.message += "; errors: " + "; ".join(report.errors)


def format_text(report: Report) -> str:
    """The report for people."""
    lines = []
    prefix = "tpu-unlock (dry run): " if report.dry_run else "tpu-unlock: "
    devices = " ".join(report.devices) if report.devices else "none found"
    lines.append(f"{prefix}devices: {devices}")
    if report.holders:
        lines.append(f"{prefix}held by:")
        lines.append(f"  {'PID':>7}  {'USER':<12}  COMMAND")
        for h in report.holders:
            lines.append(f"  {h.pid:>7}  {h.user:<12}  {h.command}  [{', '.join(h.holds)}]")
    for k in report.killed:
        lines.append(f"{prefix}sent {k['signal']} to pid {k['pid']} ({k['user']}): {k['command']}")
    for item in report.refused:
        what = item.get("path") or f"pid {item.get('pid')}"
        lines.append(f"{prefix}refused {what}: {item['reason']}")
    for path in report.kept:
        lines.append(f"{prefix}kept {path}")
    for path in report.removed:
        lines.append(f"{prefix}{'would remove' if report.dry_run else 'removed'} {path}")
    lines.append(f"{prefix}{report.message}")
    return "\n".join(lines)


def _grace(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, got {value}")
    return seconds


def _uid(value: str) -> int:
    if value.isdigit():
        return int(value)
    try:
        return pwd.getpwnam(value).pw_uid
    except KeyError:
        raise argparse.ArgumentTypeError(f"no such user: {value!r}") from None


def _env_list(name: str, default: tuple[str, ...]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item for item in value.split(":") if item]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command line options; every path also has an environment variable (for tests)."""
    parser = argparse.ArgumentParser(
        prog="tpu-unlock",
        description=(
            "Remove stale libtpu lock files and logs when no process holds a TPU device; "
            "otherwise list the processes that do (and end them with --kill)."
        ),
        epilog=(
            "Exit codes: 0 free, 1 error, 2 usage, 3 held (locks kept), "
            "4 processes not inspectable (run as root), 5 something unsafe refused. "
            "A --device-glob outside the TPU families (accel*, accel/*, vfio/[0-9]*) is a usage "
            "error."
        ),
    )
    add = parser.add_argument
    add(
        "--device-glob",
        dest="device_globs",
        action="append",
        metavar="GLOB",
        help="TPU device files, in folders only root can change (repeatable; env "
        f"TPU_UNLOCK_DEVICE_GLOB, ':'-separated; default {' and '.join(DEFAULT_DEVICE_GLOBS)})",
    )
    add(
        "--dev-root",
        default=os.environ.get("TPU_UNLOCK_DEV_ROOT", DEFAULT_DEV_ROOT),
        metavar="PATH",
        help="the device folder every --device-glob must be in (env TPU_UNLOCK_DEV_ROOT; "
        f"default {DEFAULT_DEV_ROOT}; tests point it at a fake)",
    )
    add(
        "--lock",
        dest="locks",
        action="append",
        metavar="PATH",
        help="lock file directly in the lock folder (repeatable; env TPU_UNLOCK_LOCKS, "
        f"':'-separated; default {' and '.join(DEFAULT_LOCKS)})",
    )
    add(
        "--log-dir",
        default=os.environ.get("TPU_UNLOCK_LOG_DIR", DEFAULT_LOG_DIR),
        metavar="PATH",
        help="libtpu log folder removed with the locks (env TPU_UNLOCK_LOG_DIR; "
        f"default {DEFAULT_LOG_DIR})",
    )
    add(
        "--tmp-dir",
        default=os.environ.get("TPU_UNLOCK_TMP_DIR", DEFAULT_TMP),
        metavar="PATH",
        help=f"the lock folder (env TPU_UNLOCK_TMP_DIR; default {DEFAULT_TMP})",
    )
    add(
        "--owner",
        dest="owners",
        action="append",
        default=[],
        type=_uid,
        metavar="NAME",
        help="lock files may belong to root or this user (repeatable; default: root or any "
        f"account from uid {FIRST_REGULAR_UID} on)",
    )
    add("--keep-logs", action="store_true", help="do not remove the log folder")
    add(
        "--proc",
        default=os.environ.get("TPU_UNLOCK_PROC", DEFAULT_PROC),
        metavar="PATH",
        help=f"proc file system to scan (env TPU_UNLOCK_PROC; default {DEFAULT_PROC})",
    )
    add("--kill", action="store_true", help="end the processes that hold a TPU device")
    add(
        "--user",
        dest="users",
        action="append",
        default=[],
        metavar="NAME",
        help="with --kill, only end processes of this user (name or uid; repeatable)",
    )
    add(
        "--grace",
        type=_grace,
        default=DEFAULT_GRACE,
        metavar="SECONDS",
        help=f"with --kill, seconds between TERM and KILL (default {DEFAULT_GRACE:g})",
    )
    add("--dry-run", action="store_true", help="report what would be done; change nothing")
    add("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.device_globs is None:
        args.device_globs = _env_list("TPU_UNLOCK_DEVICE_GLOB", DEFAULT_DEVICE_GLOBS)
    if not os.path.isabs(args.dev_root) or os.path.normpath(args.dev_root) != args.dev_root:
        parser.error(f"--dev-root {args.dev_root}: give an absolute, normalised path such as /dev")
    for pattern in args.device_globs:
        prefix = args.dev_root.rstrip("/") + "/"
        if not (pattern.startswith(prefix) and DEVICE_FAMILIES.fullmatch(pattern[len(prefix) :])):
            parser.error(
                f"--device-glob {pattern}: not a TPU device pattern (it could match other "
                f"devices' files); allowed: {prefix}accel*, {prefix}accel/*, {prefix}vfio/[0-9]* "
                "(after the prefix only digits, '*', '?' and classes such as [0-9])"
            )
    if args.locks is None:
        args.locks = _env_list("TPU_UNLOCK_LOCKS", DEFAULT_LOCKS)
    if args.users and not args.kill:
        parser.error("--user only makes sense with --kill")
    if not os.path.isabs(args.tmp_dir) or os.path.normpath(args.tmp_dir) != args.tmp_dir:
        parser.error(f"--tmp-dir {args.tmp_dir}: give an absolute, normalised path such as /tmp")
    args.owner_uids = set(args.owners) if args.owners else None
    return args


def main(argv: list[str] | None = None) -> int:
    """Run tpu-unlock; returns the exit code."""
    args = parse_args(argv)
    report = unlock(args)
    if args.json:
        print(json.dumps(report.as_dict(), indent=None, sort_keys=True))
    else:
        print(format_text(report))
        if report.errors:
            for error in report.errors:
                print(f"tpu-unlock: error: {error}", file=sys.stderr)
    return report.exit_code
