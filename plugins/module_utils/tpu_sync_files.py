# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What playbooks/sync.yml copies from a local folder and what it removes on a worker.

Git's ignore rules, decided here once: :func:`sync_files` lists the files of the folder to copy
(all but ``.git`` and what its ``.gitignore`` files name) and :func:`sync_stale` the files a
worker has that the folder no longer has, leaving the ignored ones alone. The filters sync_files
and sync_stale read them, so what is copied and what is kept agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    base: str  # folder of the .gitignore, relative ('' for the top)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _glob(pattern: str) -> str:
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out, i = out + "/.*", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif c == "*":
            out, i = out + "[^/]*", i + 1
        elif c == "?":
            out, i = out + "[^/]", i + 1
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out, i = out + re.escape(c), i + 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                body = "^" + body[1:] if body.startswith("!") else body
                out, i = out + f"[{body}]", end + 1
        elif c == "\\" and i + 1 < len(pattern):
            out, i = out + re.escape(pattern[i + 1]), i + 2
        else:
            out, i = out + re.escape(c), i + 1
    return out


def parse_rules(text: str, base: str = "") -> list[Rule]:
    """The rules of one .gitignore whose folder is ``base`` (relative to the top)."""
    rules = []
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        if line.startswith(("\\#", "\\!")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob(line)
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + "$", re.S)
        rules.append(Rule(base, regex, negate, dir_only))
    return rules


class Ignore:
    """The .gitignore rules found so far; later (deeper, later in file) rules win."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.pruned = 0

    def add(self, rules: list[Rule]) -> None:
        self.rules.extend(rules)

    def match(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` itself is ignored (its folders not considered)."""
        ignored = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.base:
                if not path.startswith(rule.base + "/"):
                    continue
                rel = path[len(rule.base) + 1 :]
            else:
                rel = path
            if rule.regex.match(rel):
                ignored = not rule.negate
        return ignored

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        """Whether ``path`` is ignored, itself or through one of its folders."""
        parts = path.split("/")
        if ".git" in parts:
            return True
        for depth in range(1, len(parts)):
            if self.match("/".join(parts[:depth]), True):
                return True
        return self.match(path, is_dir)


def load_ignore(top: str) -> Ignore:
    """Every .gitignore below ``top`` (folders inside .git or ignored folders skipped)."""
    ignore = Ignore()
    for _entry in _walk(top, ignore):
        pass
    return ignore


def _walk(top: str, ignore: Ignore):
    for folder, dirs, files in os.walk(top):
        rel = os.path.relpath(folder, top)
        rel = "" if rel == "." else rel
        name = os.path.join(folder, ".gitignore")
        if ".gitignore" in files and os.path.isfile(name):
            with open(name, encoding="utf-8", errors="replace") as handle:
                ignore.add(parse_rules(handle.read(), rel))
        kept = []
        for d in sorted(dirs):
            path = f"{rel}/{d}" if rel else d
            if d == ".git" or ignore.match(path, True):
                ignore.pruned += 1
                continue
            kept.append(d)
        dirs[:] = kept
        yield folder, dirs, files


def sync_files(src: str) -> dict[str, Any]:
    """The relative paths to copy from ``src``, and how many entries were left out; ValueError
    when ``src`` is not a folder on this machine."""
    if not isinstance(src, str) or not os.path.isdir(src):
        raise ValueError(f"sync_files: {src!r} is not a folder on this machine")
    ignore = Ignore()
    files: list[str] = []
    left_out = 0
    for folder, dirs, names in _walk(src, ignore):
        rel = os.path.relpath(folder, src)
        rel = "" if rel == "." else rel
        entries = list(names)
        # folder links are not walked; they are copied as links
        entries += [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in entries:
            path = f"{rel}/{name}" if rel else name
            if name == ".git" or ignore.match(path, False):
                left_out += 1
                continue
            files.append(path)
    return {"files": sorted(files), "ignored": left_out + ignore.pruned}


def sync_stale(remote: Iterable[str], src: str, files: Iterable[str]) -> list[str]:
    """Remote files the folder lost, leaving ignored ones and .git alone."""
    keep = set(files)
    ignore = load_ignore(src)
    stale = []
    for path in remote:
        path = str(path).strip()
        path = path[2:] if path.startswith("./") else path
        if not path or path in keep or ".." in path.split("/"):
            continue
        if ignore.ignored(path):
            continue
        stale.append(path)
    return sorted(set(stale))
