"""What the tcmalloc role says (plugins/filter/tcmalloc_preloads.py,
plugins/filter/tcmalloc_summary.py): where the scan found TCMalloc preloaded, and what the mode
did."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.tcmalloc_preloads import tcmalloc_preloads
from ansible_collections.cloudtpu.pod.plugins.filter.tcmalloc_summary import tcmalloc_summary

LIB = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
FOUND = [
    {"file": "/etc/environment", "line_number": 3, "line": f"LD_PRELOAD={LIB}", "kind": "env"},
    {"file": "/etc/ld.so.preload", "line_number": 1, "line": LIB, "kind": "preload"},
]
DONE = {
    "found": FOUND,
    "disabled": ["x"],
    "restored": [],
    "backup_file": "/etc/cloudtpu/tcmalloc.orig",
    "env_file": "/etc/cloudtpu/tcmalloc.env",
    "library": LIB,
    "venv_path": "/home/tpu/venv",
}


def test_each_preload_is_file_line_and_text() -> None:
    assert tcmalloc_preloads(FOUND) == [
        f"/etc/environment:3:LD_PRELOAD={LIB}",
        f"/etc/ld.so.preload:1:{LIB}",
    ]


def test_no_preload_names_the_places_looked_at() -> None:
    expected = [
        "TCMalloc is not preloaded globally: nothing set in /etc/environment, "
        "/etc/environment.d, /etc/security/pam_env.conf, /etc/profile, /etc/bash.bashrc, "
        "/etc/profile.d or /etc/ld.so.preload"
    ]
    assert tcmalloc_preloads([]) == tcmalloc_preloads(None) == expected


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "keep",
            "mode keep: changed nothing; 2 global TCMalloc preload(s) in place, "
            "1 disabled earlier.",
        ),
        (
            "disable",
            "mode disable: 2 global preload(s) taken out now, 1 earlier; originals in "
            "/etc/cloudtpu/tcmalloc.orig (tpu_tcmalloc_mode=restore puts them back).",
        ),
        (
            "framework",
            "mode framework: 2 global preload(s) taken out now, 1 earlier; the venv "
            f"/home/tpu/venv preloads {LIB} when activated; other programs can use "
            "/etc/cloudtpu/tcmalloc.env.",
        ),
        ("restore", "mode restore: put back 0 line(s) from /etc/cloudtpu/tcmalloc.orig."),
    ],
)
def test_each_mode_says_what_it_did(mode: str, expected: str) -> None:
    assert tcmalloc_summary(mode, DONE) == expected


def test_restore_counts_the_lines_put_back() -> None:
    done = {**DONE, "restored": [{"file": "/etc/environment"}] * 3, "found": []}
    assert tcmalloc_summary("restore", done).startswith("mode restore: put back 3 line(s) from")


def test_an_unknown_mode_is_an_error() -> None:
    with pytest.raises(AnsibleFilterError, match="no such mode 'off'"):
        tcmalloc_summary("off", DONE)
