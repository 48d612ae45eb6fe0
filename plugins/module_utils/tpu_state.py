# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A role's converged state on a worker, recorded once and looked at again in one call.

After a role's tasks succeed, the role records what it manages (files, links and folders,
packages, systemd units, the output of read-only commands) together with a digest of its
inputs (its variables, the facts it reads, its own code). On the next run one call compares
the worker with that record: when the digest is the same and every recorded item still looks
the same, the role is converged and its tasks are skipped; anything else (no record, other
inputs, a file edited, a package removed, a unit stopped) sends the role through its tasks.

Nothing is looked at unless the digest matches: items named by inputs that have not passed the
role's checks yet (a path, a command) are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
import tempfile

STATE_DIR = "/var/lib/cloudtpu/state"
RECORD_VERSION = 1
COMMAND_TIMEOUT = 120


class StateError(Exception):
    """The record's folder or file cannot be trusted."""


def _trusted_dir(path: str, mode: int) -> None:
    """Make `path` a root-owned folder (not a link) with `mode`, its parent first."""
    parent = os.path.dirname(path)
    if parent and parent != "/" and not os.path.isdir(parent):
        _trusted_dir(parent, 0o755)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise StateError(
            f"{path} is not a folder owned by root and writable only by it; remove it by hand"
        )


def record_path(role: str, state_dir: str = STATE_DIR) -> str:
    if not role.replace("_", "").isalnum() or not role.islower():
        raise StateError(f"role {role!r}: only lower-case letters, digits and '_' are allowed")
    return os.path.join(state_dir, role + ".json")


def read_record(role: str, state_dir: str = STATE_DIR) -> dict | None:
    path = record_path(role, state_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StateError(f"{path}: {error.strerror}") from error
    with os.fdopen(fd, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != 0 or info.st_mode & 0o077:
            raise StateError(f"{path} is not owned by root with mode 0600; remove it by hand")
        try:
            record = json.load(handle)
        except ValueError:
            return None
    return record if isinstance(record, dict) and record.get("version") == RECORD_VERSION else None


def write_record(role: str, record: dict, state_dir: str = STATE_DIR) -> None:
    _trusted_dir(state_dir, 0o700)
    path = record_path(role, state_dir)
    fd, tmp = tempfile.mkstemp(dir=state_dir, prefix="." + role + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(dict(record, version=RECORD_VERSION), handle, sort_keys=True, indent=1)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def forget_record(role: str, state_dir: str = STATE_DIR) -> bool:
    try:
        os.unlink(record_path(role, state_dir))
    except FileNotFoundError:
        return False
    return True


def observe_path(path: str) -> dict:
    """What is at `path`, without following a link: kind, owner, mode, and content or target."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "absent"}
    except NotADirectoryError:
        return {"kind": "absent"}
    seen = {"uid": info.st_uid, "gid": info.st_gid, "mode": oct(stat.S_IMODE(info.st_mode))}
    if stat.S_ISLNK(info.st_mode):
        return {"kind": "link", "target": os.readlink(path), "uid": info.st_uid}
    if stat.S_ISDIR(info.st_mode):
        return dict(seen, kind="directory")
    if not stat.S_ISREG(info.st_mode):
        return dict(seen, kind="other")
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return dict(seen, kind="file", sha256=digest.hexdigest())


# A runner takes argv and the environment to add, and returns (exit code, output as bytes):
# the module passes AnsibleModule.run_command (tpu_state.runner), the tests a fake or a local one.
SYSTEM_ENV = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def observe_packages(names: list[str], run) -> dict:
    """Each package's dpkg status word and version ('installed 1.2-3' when it is installed),
    'absent' when dpkg knows none. A name may carry ':arch' or '=version' as apt takes it."""
    if not names:
        return {}
    bare = {name: name.split("=", 1)[0].split(":", 1)[0] for name in names}
    _rc, out = run(
        [
            "dpkg-query",
            "-W",
            "-f",
            "${Package}\\t${db:Status-Status} ${Version}\\n",
            *sorted(set(bare.values())),
        ],
        SYSTEM_ENV,
    )
    lines = out.decode("utf-8", "replace").splitlines()
    found = dict(line.split("\t", 1) for line in lines if line.count("\t") == 1)
    return {name: found.get(pkg, "absent").strip() or "absent" for name, pkg in bare.items()}


def dpkg_problems(run, updates_dir: str = "/var/lib/dpkg/updates") -> list[str]:
    """An interrupted dpkg run: journal files left in dpkg's updates folder, or `dpkg --audit`."""
    problems = []
    try:
        journal = sorted(name for name in os.listdir(updates_dir) if name.isdigit())
    except FileNotFoundError:
        journal = []
    if journal:
        problems.append("dpkg journal entries " + ", ".join(journal))
    _rc, out = run(["dpkg", "--audit"], SYSTEM_ENV)
    audit = out.decode("utf-8", "replace").strip()
    if audit:
        problems.append("dpkg --audit: " + audit.splitlines()[0])
    return problems


UNIT_PROPERTIES = ("LoadState", "UnitFileState", "ActiveState")


def observe_units(names: list[str], run) -> dict:
    """LoadState, UnitFileState and ActiveState of each systemd unit."""
    if not names:
        return {}
    _rc, out = run(
        ["systemctl", "show", "--property=" + ",".join(UNIT_PROPERTIES), "--", *names],
        SYSTEM_ENV,
    )
    text = out.decode("utf-8", "replace")
    blocks = [block for block in text.strip().split("\n\n") if block.strip()]
    seen = {}
    blocks += [""] * (len(names) - len(blocks))
    for index, name in enumerate(names):
        block = blocks[index]
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        seen[name] = {key: props.get(key, "") for key in UNIT_PROPERTIES}
    return seen


def command_argv(argv: list[str], user: str = "") -> list[str]:
    """The command as run: bounded by `timeout` (which also turns a missing program into exit
    code 127), as `user` through runuser (its uid, groups and home) when given."""
    as_user = ["runuser", "-u", user, "--"] if user else []
    return ["timeout", str(COMMAND_TIMEOUT), *as_user, *argv]


def observe_command(argv: list[str], user: str, run) -> dict:
    """Exit code and the sha256 of the output of a read-only command, as `user` when given."""
    if user:
        try:
            pwd.getpwnam(user)
        except KeyError:
            return {"rc": None, "error": f"no user {user!r}"}
    env = {"LC_ALL": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
    rc, out = run(command_argv(argv, user), env)
    return {"rc": rc, "sha256": hashlib.sha256(out).hexdigest()}


def observe(spec: dict, run) -> dict:
    """Everything `spec` names (paths, packages, units, commands), as it is now."""
    return {
        "paths": {path: observe_path(path) for path in spec.get("paths", [])},
        "packages": observe_packages(spec.get("packages", []), run),
        "units": observe_units(spec.get("units", []), run),
        "commands": [
            dict(
                observe_command(c["argv"], c.get("user", ""), run),
                argv=c["argv"],
                user=c.get("user", ""),
            )
            for c in spec.get("commands", [])
        ],
    }


def runner(module):
    """AnsibleModule.run_command as a runner: output as bytes, run from /."""

    def run(argv: list[str], env: dict) -> tuple[int, bytes]:
        rc, out, _err = module.run_command(
            argv, environ_update=env, cwd="/", encoding=None, expand_user_and_vars=False
        )
        return rc, out

    return run


def recorded_spec(record: dict, spec: dict) -> dict:
    """What a check looks at: every item of the record (what the role managed, with the same
    inputs) and every item the check names."""
    commands = [{"argv": c["argv"], "user": c.get("user", "")} for c in record.get("commands", [])]
    for command in spec.get("commands", []):
        wanted = {"argv": command["argv"], "user": command.get("user", "")}
        if wanted not in commands:
            commands.append(wanted)
    merged = {"commands": commands}
    for kind in ("paths", "packages", "units"):
        names = list(record.get(kind, {}))
        merged[kind] = names + [name for name in spec.get(kind, []) if name not in names]
    return merged


def shown(argv: list[str]) -> str:
    """A command as messages show it: a script given as an argument (python -c) by its size."""
    return " ".join(
        f"<script of {arg.count(chr(10)) + 1} lines>" if "\n" in arg or len(arg) > 200 else arg
        for arg in argv
    )


def differences(recorded: dict, seen: dict) -> list[str]:
    """What differs between a record and what is there now, one line each."""
    found = []
    for kind in ("paths", "packages", "units"):
        before, now = recorded.get(kind, {}), seen.get(kind, {})
        for name in now:
            if name not in before:
                found.append(f"{kind[:-1]} {name}: not in the record")
            elif before[name] != now[name]:
                found.append(f"{kind[:-1]} {name}: was {before[name]}, now {now[name]}")
    before_cmds = {
        json.dumps([c.get("argv"), c.get("user", "")]): c for c in recorded.get("commands", [])
    }
    for command in seen.get("commands", []):
        key = json.dumps([command["argv"], command.get("user", "")])
        if before_cmds.get(key) != command:
            found.append(f"command {shown(command['argv'])}: output or exit code differs")
    return found


def unhealthy(seen: dict) -> list[str]:
    """What must not be recorded as converged: packages not installed, failed commands."""
    found = [
        f"package {name}: {status}"
        for name, status in seen.get("packages", {}).items()
        if not status.startswith("installed ")
    ]
    found += [
        f"command {shown(c['argv'])}: exit code {c.get('rc')} {c.get('error', '')}".rstrip()
        for c in seen.get("commands", [])
        if c.get("rc") != 0
    ]
    return found
