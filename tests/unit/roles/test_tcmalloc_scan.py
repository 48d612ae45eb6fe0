"""tcmalloc-scan (roles/tcmalloc/files/tcmalloc-scan) on fake /etc trees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[3] / "roles" / "tcmalloc" / "files" / "tcmalloc-scan"
LIB = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
MARKER = "# cloudtpu.pod tcmalloc disabled: "


def scan(root: Path) -> dict:
    result = subprocess.run(
        [sys.executable, str(TOOL), "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_nothing_set(tmp_path: Path) -> None:
    write(tmp_path, "/etc/environment", 'PATH="/usr/local/bin:/usr/bin"\n')
    assert scan(tmp_path) == {"found": [], "disabled": []}


def test_no_etc_at_all(tmp_path: Path) -> None:
    assert scan(tmp_path) == {"found": [], "disabled": []}


@pytest.mark.parametrize(
    ("path", "line", "kind"),
    [
        ("/etc/environment", f'LD_PRELOAD="{LIB}"', "environment"),
        ("/etc/environment.d/50-tcmalloc.conf", f"LD_PRELOAD={LIB}", "environment"),
        ("/etc/security/pam_env.conf", f"LD_PRELOAD DEFAULT={LIB}", "environment"),
        ("/etc/profile.d/tcmalloc.sh", f"export LD_PRELOAD={LIB}", "shell"),
        ("/etc/bash.bashrc", f'    export LD_PRELOAD="{LIB}:$LD_PRELOAD"', "shell"),
        ("/etc/profile", f"LD_PRELOAD={LIB}; export LD_PRELOAD", "shell"),
        ("/etc/ld.so.preload", LIB, "preload"),
    ],
)
def test_finds_each_place(tmp_path: Path, path: str, line: str, kind: str) -> None:
    write(tmp_path, path, f"# a comment\n{line}\n")
    found = scan(tmp_path)["found"]
    assert found == [{"file": path, "line_number": 2, "line": line, "kind": kind}], found


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/etc/environment", f'# LD_PRELOAD="{LIB}"\n'),
        ("/etc/environment", 'LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"\n'),
        ("/etc/profile.d/check.sh", f"if [ -f {LIB} ]; then echo tcmalloc; fi\n"),
        ("/etc/ld.so.preload", f"# {LIB}\n"),
        ("/etc/profile.d/tcmalloc.sh.disabled", f"export LD_PRELOAD={LIB}\n"),
    ],
    ids=["commented", "other-library", "mentions-only", "preload-comment", "not-a-.sh"],
)
def test_ignores_what_does_not_preload(tmp_path: Path, path: str, text: str) -> None:
    write(tmp_path, path, text)
    assert scan(tmp_path)["found"] == []


def test_reports_lines_disabled_by_the_role(tmp_path: Path) -> None:
    original = f'LD_PRELOAD="{LIB}"'
    write(tmp_path, "/etc/environment", f"{MARKER}{original}\n")
    write(tmp_path, "/etc/profile.d/t.sh", f": {MARKER}export LD_PRELOAD={LIB}\n")
    result = scan(tmp_path)
    assert result["found"] == [], result
    assert [(d["file"], d["line"]) for d in result["disabled"]] == [
        ("/etc/environment", original),
        ("/etc/profile.d/t.sh", f"export LD_PRELOAD={LIB}"),
    ], result
