"""remote_shell on a worker: mosh starts in a fresh login, byobu starts on interactive login."""

from __future__ import annotations

import re

import pytest

USER = "tpu"
LOCALE = "en_US.UTF-8"
KEY = "/root/.ssh/tpu_login"
# A login with an empty environment (no LANG, no LC_*) and no client config that would
# forward the caller's locale (Debian's /etc/ssh/ssh_config sends LANG and LC_*).
SSH = (
    f"env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ssh -F /dev/null -i {KEY} -o BatchMode=yes "
    "-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/root/.ssh/known_hosts.test "
    f"{USER}@127.0.0.1"
)
SU = f"env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin su - {USER} -c"
LOGINS = {"ssh": SSH, "su-login": SU}
BYOBU_LINE = "_byobu_sourced=1 . /usr/bin/byobu-launch 2>/dev/null || true"


@pytest.mark.parametrize("package", ["mosh", "byobu", "locales"])
def test_package_installed(host, package):
    pkg = host.package(package)
    assert pkg.is_installed, f"{package} is not installed"


def test_locale_is_generated(host):
    out = host.check_output("locale -a")
    assert "en_US.utf8" in out.split(), f"`locale -a` lists:\n{out}"


def test_locale_is_the_system_default(host):
    content = host.file("/etc/default/locale").content_string
    assert f"LANG={LOCALE}" in content.splitlines(), f"/etc/default/locale:\n{content}"


@pytest.mark.parametrize("login", sorted(LOGINS))
def test_mosh_server_starts_in_a_fresh_login(host, login):
    cmd = LOGINS[login] + " 'echo \"login LANG=$LANG\"; mosh-server new -p 60001:60999'"
    result = host.run(cmd)
    evidence = f"$ {cmd}\nrc={result.rc}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    pid = re.search(r"mosh-server detached, pid = (\d+)", result.stderr)
    if pid:
        host.run(f"kill {pid.group(1)}")
    assert result.rc == 0, evidence
    assert f"login LANG={LOCALE}" in result.stdout, evidence
    assert re.search(r"^MOSH CONNECT \d+ \S+$", result.stdout, re.M), evidence
    assert pid, evidence


def test_byobu_launcher_in_profile(host):
    profile = host.file(f"/home/{USER}/.profile")
    lines = profile.content_string.splitlines()
    assert lines.count(BYOBU_LINE) == 1, f"~/.profile:\n{profile.content_string}"
    assert profile.user == USER, f"~/.profile is owned by {profile.user}"


@pytest.mark.parametrize(
    ("session", "expect_byobu"),
    [("interactive", True), ("non-interactive", False)],
)
def test_byobu_on_login(host, session, expect_byobu):
    host.run(f"su {USER} -c 'tmux kill-server' ")
    if session == "interactive":
        # A terminal (script gives the login a pty) and TERM, as an SSH client would.
        login = (
            "env -i PATH=/usr/bin:/bin TERM=xterm timeout 10 "
            f"script -qec 'su - {USER}' /dev/null </dev/null >/dev/null 2>&1"
        )
    else:
        login = f"{SSH} 'echo logged in'"
    done = host.run(login)
    sessions = host.run(f"su {USER} -c 'tmux list-sessions -F \"#{{session_name}}\"'")
    clients = host.run("ps -eo user,args")
    host.run(f"su {USER} -c 'tmux kill-server'")
    evidence = (
        f"login rc={done.rc} {done.stdout}{done.stderr}\n"
        f"tmux list-sessions rc={sessions.rc}: {sessions.stdout}{sessions.stderr}\n"
        f"processes:\n{clients.stdout}"
    )
    started = sessions.rc == 0 and sessions.stdout.strip() != ""
    assert started == expect_byobu, evidence
    if expect_byobu:
        assert "byobu" in clients.stdout, evidence
