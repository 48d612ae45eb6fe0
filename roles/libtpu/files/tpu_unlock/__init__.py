"""tpu-unlock: release a TPU that a crashed or stopped program left locked.

libtpu lets one process per host use the TPU. A process that dies leaves its lock files
(/tmp/libtpu_lockfile, and with newer libtpu /tmp/libtpu.so_lockfile) and its logs
(/tmp/tpu_logs) behind, and the next program then refuses to start. Removing the lock while a
live process still holds the TPU does not help and is unsafe, so this tool first looks for the
processes that hold a TPU device open:

* nobody holds the TPU: the lock files and the log folder are removed;
* somebody does: the holders are listed (pid, user, command) and the lock is kept;
  with --kill they are ended (TERM, then KILL after --grace seconds), optionally only the
  processes of the users given with --user, and then the lock is removed.

Safety: /tmp is writable by every user, so nothing there is trusted by name.
* A holder is a process with an open descriptor on a TPU device, matched by what the kernel
  says the descriptor is (its device number, or device and inode), never by a path name.
  Only processes that hold a TPU device are ever signalled, and nobody is when a file the
  device glob matched was refused.
* Device globs must be TPU device patterns (/dev/accel*, /dev/accel/*, /dev/vfio/[0-9]*):
  anything else ("/dev/*", "/dev/fuse") is a usage error, before anything is looked at.
* Device files count only in folders that only root (or the caller) can change, and must be
  character devices (a regular file there stands in for a device in tests); memory and
  terminal devices such as /dev/null are never a TPU.
* Lock files and the log folder must sit directly in the lock folder (/tmp), carry libtpu's
  names (libtpu*lockfile, tpu_logs*) and belong to root or a regular account (or to --owner).
  A symbolic link, fifo, socket, device, hard link or folder in a lock file's place is refused
  and left alone. Removal goes through a descriptor of the folder: the file is opened without
  following links, its identity checked, checked again just before unlinkat.
* Whatever is refused is listed, with the reason, in the report ("refused" in --json).

Exit codes:
  0  the TPU is free (stale locks were removed, or there were none)
  1  an error (a path could not be removed, a process could not be signalled)
  2  usage error
  3  a process still holds the TPU; the locks were kept
  4  some processes could not be inspected (run as root); the locks were kept
  5  something unsafe was refused (see "refused"); it was left alone

The command /usr/local/bin/tpu-unlock runs this package, which the libtpu role installs in
/usr/local/lib/cloudtpu/tpu_unlock/. Its parts: this module, the paths, names and exit codes
and the report; holders.py, the TPU devices and the processes that hold them (read from /proc),
and ending them; lockfolder.py, which folders can be trusted and the safe removal of the lock
files; cli.py, the options, the decision (find, end, remove) and the text or JSON report.

Python 3.8 or newer, standard library only.
"""

from __future__ import annotations

import pwd
import re
from dataclasses import asdict, dataclass, field

# libtpu's own fixed paths in /tmp: this tool only inspects and removes them, never creates them.
DEFAULT_TMP = "/tmp"
DEFAULT_LOCKS = ("/tmp/libtpu_lockfile", "/tmp/libtpu.so_lockfile")
DEFAULT_LOG_DIR = "/tmp/tpu_logs"
LOCK_NAME = re.compile(r"^libtpu[A-Za-z0-9._-]*lockfile$")
LOG_NAME = re.compile(r"^tpu_logs[A-Za-z0-9._-]*$")
# /dev/accel* up to TPU v4, /dev/vfio/<n> from v5e/v5p on.
DEFAULT_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/[0-9]*")
DEFAULT_DEV_ROOT = "/dev"
# The only device globs accepted, after "<dev root>/": accel<N>, accel/accel<N>, vfio/<N>, with
# digits, '*', '?' and digit classes ([0-9]). The same pattern as DEVICE_FAMILIES in the
# collection's module_utils/tpu_checks.py (a unit test keeps them equal); "/dev/*" or
# "/dev/fuse" would make --kill end every holder of an unrelated device.
DEVICE_FAMILIES = re.compile(
    r"accel(?:/accel)?(?:[0-9*?]|\[[0-9-]+\])*|accel/(?:[0-9*?]|\[[0-9-]+\])+"
    r"|vfio/(?:[0-9]|\[[0-9-]+\])(?:[0-9*?]|\[[0-9-]+\])*"
)
# Accounts below this uid are system accounts; nobody is nobody's lock owner.
FIRST_REGULAR_UID = 1000
NOBODY_UID = 65534
DEFAULT_PROC = "/proc"
DEFAULT_GRACE = 10.0

EXIT_FREE = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_HELD = 3
EXIT_UNKNOWN = 4
EXIT_REFUSED = 5


@dataclass
class Holder:
    """A process that has a TPU device or a libtpu lock file open."""

    pid: int
    uid: int
    user: str
    command: str
    holds: list[str]
    start_time: str = ""
    device: bool = False


@dataclass
class Report:
    """What was found and done; printed as text or as JSON (--json)."""

    devices: list[str] = field(default_factory=list)
    holders: list[Holder] = field(default_factory=list)
    killed: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dry_run: bool = False
    exit_code: int = EXIT_FREE
    message: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.killed)

    def refuse(self, path: str, reason: str) -> None:
        self.refused.append({"path": path, "reason": reason})

    def as_dict(self) -> dict:
        data = asdict(self)
        data["changed"] = self.changed
        for holder in data["holders"]:
            holder.pop("start_time", None)
            holder.pop("device", None)
        return data


def user_name(uid: int) -> str:
    """The account name of a uid, or the number when the account is unknown."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
