"""Pull mode's checkout at boot (issue 28): the checkout part of the startup script
(playbooks/templates/pull_startup.sh.j2) runs here against local repositories: the commit is
checked out and checked, a branch the server names like the commit does not move it, a commit
the server lacks fails, and a branch runs only when asked for by name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.playbooks.test_pull_options import BASE, render

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.test",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.test",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def server(tmp_path: Path) -> dict[str, str]:
    """A repository with two commits on main, and a branch named like the first commit whose
    tip is a third: what a server that wants to move a pinned checkout would offer."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    for n in (1, 2):
        (origin / "site.yml").write_text(f"# {n}\n")
        git(origin, "add", "site.yml")
        git(origin, "commit", "-q", "-m", f"c{n}")
        if n == 1:
            first = git(origin, "rev-parse", "HEAD")
    second = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-q", "-b", "other")
    (origin / "site.yml").write_text("# hostile\n")
    git(origin, "commit", "-q", "-am", "hostile")
    hostile = git(origin, "rev-parse", "HEAD")
    git(origin, "branch", first, hostile)
    git(origin, "tag", first, hostile)
    git(origin, "checkout", "-q", "main")
    return {"url": f"file://{origin}", "first": first, "second": second, "hostile": hostile}


def checkout_part(values: dict[str, object]) -> str:
    """The script's checkout part, as rendered, with the variables it reads."""
    script = render(values)
    head = [ln for ln in script.splitlines() if re.match(r"(repo|version|pinned)=", ln)]
    part = script.split("# The checkout: the commit asked for", 1)[1]
    part = part.split("# This worker's inventory host", 1)[0]
    return "\n".join(
        [
            "set -eu",
            *head,
            "checkout=$1",
            'say() { echo "pull: $*"; }',
            'retry() { shift 3; "$@"; }',
            "# The checkout" + part,
            'echo "HEAD=$commit"',
        ]
    )


def run_checkout(tmp_path: Path, values: dict[str, object]) -> subprocess.CompletedProcess:
    path = tmp_path / "checkout.sh"
    path.write_text(checkout_part({**BASE, **values}))
    return subprocess.run(
        ["bash", str(path), str(tmp_path / "checkout")],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )


pytestmark_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytestmark_git
def test_the_pinned_commit_is_checked_out_whatever_the_server_names_so(tmp_path, server):
    done = run_checkout(tmp_path, {"repo": server["url"], "version": server["first"]})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"HEAD={server['first']}" in done.stdout
    assert f"at commit {server['first']} (the one asked for)" in done.stdout
    assert (tmp_path / "checkout" / "site.yml").read_text() == "# 1\n"
    # no local branch or tag: nothing for ansible-pull's git module to take the commit for
    assert git(tmp_path / "checkout", "for-each-ref", "refs/heads", "refs/tags") == ""
    # the next boot: the commit is there already, and the server is not asked
    again = run_checkout(tmp_path, {"repo": "file:///nonexistent", "version": server["first"]})
    assert again.returncode == 0 and f"HEAD={server['first']}" in again.stdout, again.stderr


@pytestmark_git
def test_a_commit_the_server_lacks_fails_the_boot(tmp_path, server):
    missing = "f" * 40
    done = run_checkout(tmp_path, {"repo": server["url"], "version": missing})
    assert done.returncode != 0 and "HEAD=" not in done.stdout
    assert f"commit {missing} is not in {server['url']}" in done.stdout, done.stdout


@pytestmark_git
def test_a_checkout_elsewhere_is_refused_before_anything_runs(tmp_path, server):
    """The check itself: a checkout that does not end at the commit asked for (here the
    checkout command made to land elsewhere) stops the script."""
    path = tmp_path / "checkout.sh"
    part = checkout_part({**BASE, "repo": server["url"], "version": server["second"]})
    swapped = part.replace(
        'git checkout -q --force --detach "$version"',
        "git fetch -q origin other && git checkout -q --force --detach FETCH_HEAD",
    )
    assert swapped != part
    path.write_text(swapped)
    done = subprocess.run(
        ["bash", str(path), str(tmp_path / "checkout")],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "HEAD=" not in done.stdout
    assert (
        f"is at {server['hostile']}, not at the commit asked for, {server['second']}: "
        "refusing to run it"
    ) in done.stdout


@pytestmark_git
def test_a_branch_asked_for_by_name_is_what_it_points_to(tmp_path, server):
    done = run_checkout(tmp_path, {"repo": server["url"], "version": "main", "unpinned": True})
    assert done.returncode == 0, done.stderr
    assert f"HEAD={server['second']}" in done.stdout and "(the one asked for)" not in done.stdout
