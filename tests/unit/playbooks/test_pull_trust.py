"""Pull mode's trust on the wire and at boot (issue 28): what the workers clone, which commit
they run, and what they install.

- The repository only over HTTPS or SSH (or file:// on the worker); http:// and git:// only to
  a loopback address or a host named in tpu_provision_pull_repo_http_hosts, the API's rule.
- tpu_provision_pull_version a full commit id, required; a branch or tag only with
  tpu_provision_pull_unpinned. The checkout part of the startup script runs against local
  repositories in tests/unit/playbooks/test_pull_checkout.py.
- uv and Ansible from the hashed lock (playbooks/templates/pull_requirements.txt, `make
  pull-lock` from pull_requirements.in): every entry pinned with hashes, its pins the filter's
  defaults and requirements.txt's; another version only with tpu_provision_pull_unhashed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull import (
    LOCK_NAME,
    parse_lock,
    read_lock,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull_options import (
    DEFAULT_ANSIBLE,
    DEFAULT_REQUIREMENTS,
    DEFAULT_UV_VERSION,
    pull_options,
)

from tests.unit.playbooks.test_pull_options import BASE, COMMIT, render

REPO = Path(__file__).resolve().parents[3]
LOCK = REPO / LOCK_NAME
LOCK_IN = LOCK.with_suffix(".in")
REPO_HOSTS = "tpu_provision_pull_repo_http_hosts"


def problems(**values: object) -> str:
    got = pull_options({**BASE, **values})
    return "" if got["ok"] else got["message"]


# -- the repository's transport ---------------------------------------------------------------


@pytest.mark.parametrize(
    "repo",
    [
        "https://git.example.test/you/cloudtpu-pod.git",
        "ssh://git@git.example.test/you/cloudtpu-pod.git",
        "ssh://git@git.example.test:2222/you/cloudtpu-pod.git",
        "git@git.example.test:you/cloudtpu-pod.git",
        "file:///srv/git/cloudtpu-pod.git",
        # plain transports to the worker itself
        "git://127.0.0.1:9418/cloudtpu-pod.git",
        "http://localhost:8080/cloudtpu-pod.git",
        "git://[::1]/cloudtpu-pod.git",
    ],
)
def test_encrypted_authenticated_and_local_repositories_pass(repo):
    assert problems(repo=repo) == ""


@pytest.mark.parametrize(
    ("repo", "host"),
    [
        ("git://git.example.test/cloudtpu-pod.git", "git.example.test"),
        ("http://git.example.test/cloudtpu-pod.git", "git.example.test"),
        ("git://host.docker.internal:9418/cloudtpu-pod.git", "host.docker.internal"),
        ("http://10.0.0.5/cloudtpu-pod.git", "10.0.0.5"),
    ],
)
def test_plain_http_and_git_are_refused_naming_the_opt_in(repo, host):
    message = problems(repo=repo)
    scheme = repo.split("://")[0]
    assert message.startswith(f'tpu_provision_pull_repo is "{repo}": {scheme}:// to {host} '), (
        message
    )
    assert "neither encrypts nor authenticates" in message and "as root" in message
    assert "allowed: an https:// or ssh:// URL" in message and f"{REPO_HOSTS} (now none)" in message
    assert message.endswith(f"To allow it on a network you trust, name {host} in {REPO_HOSTS}.")


@pytest.mark.parametrize("hosts", [["host.docker.internal"], "host.docker.internal, 10.0.0.5"])
def test_plain_git_to_a_host_named_in_the_opt_in_passes(hosts):
    repo = "git://host.docker.internal:9418/cloudtpu-pod.git"
    assert problems(repo=repo, repo_http_hosts=hosts) == ""
    assert problems(repo="http://HOST.docker.internal/x.git", repo_http_hosts=hosts) == ""


def test_the_api_list_does_not_open_the_repository():
    """Two exceptions, each for what crosses: the API's token, the code the workers run."""
    message = problems(
        repo="git://host.docker.internal:9418/cloudtpu-pod.git",
        api_endpoint="http://host.docker.internal:8470/v2",
        api_http_hosts=["host.docker.internal"],
    )
    assert message.startswith("tpu_provision_pull_repo is "), message
    assert "tpu_provision_pull_api_endpoint" not in message


@pytest.mark.parametrize(
    ("repo", "words"),
    [
        ("ftp://git.example.test/x.git", "the scheme ftp:// is not one git fetches over safely"),
        ("git+ssh://git.example.test/x.git", "the scheme git+ssh:// is not one"),
        ("ssh://-oProxyCommand=touch%20x/y", "it has no host or no repository path"),
        ("-oProxyCommand=x@host:path", "not a git URL"),
        ("git@-host:path", "not a git URL"),
        ("https://git.example.test", "no repository path"),
        ("file://other-host/srv/x.git", "file:// names a folder on the worker itself"),
        ("https://git.example.test/x.git\n", "not a git URL"),
        ("/srv/git/x.git", "not a git URL"),
        (["https://git.example.test/x.git"], "not a git URL"),
    ],
)
def test_other_repositories_are_refused(repo, words):
    message = problems(repo=repo)
    assert message.startswith("tpu_provision_pull_repo is ") and words in message, message
    assert "allowed: an https:// or ssh:// URL" in message


@pytest.mark.parametrize(
    "repo",
    [
        "https://x-access-token:ghp_canary123@git.example.test/you/pod.git",
        "https://ghp_canary123@git.example.test/you/pod.git",
        "ssh://git:ghp_canary123@git.example.test/you/pod.git",
        "http://user:ghp_canary123@127.0.0.1/pod.git",
    ],
)
def test_credentials_in_the_url_are_refused_without_showing_them(repo):
    # the node's metadata and every worker's pull log would keep them
    message = problems(repo=repo)
    assert message.startswith("tpu_provision_pull_repo is ") and "carries credentials" in message
    assert "ghp_canary123" not in message and "<hidden>@" in message, message


@pytest.mark.parametrize(
    ("hosts", "words"), [("*", "is a pattern"), ("git://x", "is a URL"), (["a", ""], "is empty")]
)
def test_a_bad_repository_host_list_is_refused_and_allows_nothing(hosts, words):
    message = problems(repo="git://x.example/r.git", repo_http_hosts=hosts)
    assert message.startswith(f"{REPO_HOSTS} is ") and words in message, message


# -- the commit ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, ""])
def test_the_commit_is_required_and_the_message_says_how_to_get_it(version):
    message = problems(version=version)
    assert message.startswith("tpu_provision_pull_version is required with"), message
    assert "`git rev-parse HEAD`" in message and "tpu_provision_pull_unpinned=true" in message


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("main", "a branch or tag name, which moves"),
        ("v1.0", "a branch or tag name, which moves"),
        ("HEAD", "a branch or tag name, which moves"),
        ("0123456", "a short commit id"),
        (COMMIT[:39], "a short commit id"),
        (COMMIT + "0", "not a commit id (40 or 64 hex digits), branch or tag"),
        ("a..b", "not a commit id (40 or 64 hex digits), branch or tag"),
        ("-x", "not a commit id (40 or 64 hex digits), branch or tag"),
    ],
)
def test_anything_but_a_full_commit_is_refused_without_the_opt_in(version, words):
    message = problems(version=version)
    assert message.startswith(f'tpu_provision_pull_version is "{version}": {words}'), message
    assert "allowed: a full commit id (40 hex digits, or 64 in a sha256 repository)" in message


@pytest.mark.parametrize("version", [COMMIT, COMMIT.upper(), "ab" * 32])
def test_a_full_commit_is_pinned_in_any_case(version):
    got = pull_options({**BASE, "version": version})
    assert got["ok"] and got["pinned"], got["message"]
    assert got["quoted"]["version"] == version.lower()
    assert got["quoted"]["object_format"] == ("sha256" if len(version) == 64 else "sha1")


@pytest.mark.parametrize("version", ["main", "release/2.0", "v1.0", "HEAD", "0123456", COMMIT])
def test_a_branch_or_tag_is_taken_when_asked_for_by_name(version):
    got = pull_options({**BASE, "version": version, "unpinned": "true"})
    assert got["ok"], got["message"]
    assert got["pinned"] is (version == COMMIT)  # a full commit is checked all the same


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (
            {"version": "a..b", "unpinned": True},
            "not a commit id (40 or 64 hex digits), branch or tag",
        ),
        (
            {"version": "x.lock", "unpinned": True},
            "not a commit id (40 or 64 hex digits), branch or tag",
        ),
        ({"unpinned": "maybe"}, "tpu_provision_pull_unpinned must be true or false"),
    ],
)
def test_the_opt_in_takes_only_refs(values, words):
    assert words in problems(**values)


# -- the installs ----------------------------------------------------------------------------


def test_the_lock_pins_every_entry_with_hashes():
    text = LOCK.read_text(encoding="utf-8")
    entries = parse_lock(text)
    assert {"ansible", "ansible-core", "requests", "google-auth", "uv"} <= set(entries)
    for name, (version, body) in entries.items():
        head = body.splitlines()[0]
        assert re.match(rf"^{re.escape(name)}=={re.escape(version)}( ;[^\\]*)? \\$", head), head
        hashes = re.findall(r"--hash=sha256:([0-9a-f]+)", body)
        assert hashes and all(len(h) == 64 for h in hashes), (name, body[:200])
        assert "--hash=" in body.splitlines()[1], (name, "a hash line follows the pin")
    # nothing in the lock outside its entries: every line is an entry's, a comment or blank
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert sum(body.count("\n") for _, body in entries.values()) == len(lines)
    assert "--index-url" not in text and "--extra-index-url" not in text
    assert "#    make pull-lock" in text  # its header says how to make it again


def test_the_locks_pins_are_the_in_files_the_filters_and_requirements_txt():
    """One home for the versions: pull_requirements.in; the lock is compiled from it (make
    pull-lock), the filter reads its defaults from the lock, and the workers run what the
    control machine runs (requirements.txt)."""
    wanted = [ln.strip() for ln in LOCK_IN.read_text().splitlines() if ln.strip() and ln[0] != "#"]
    assert wanted == [*[DEFAULT_ANSIBLE], *DEFAULT_REQUIREMENTS, f"uv=={DEFAULT_UV_VERSION}"]
    entries = parse_lock(LOCK.read_text())
    for pin in wanted:
        name, version = pin.split("==")
        assert entries[name][0] == version, (pin, entries[name][0])
    pins = {
        line.split("==")[0].lower(): line.strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    differ = [pin for pin in wanted if pins[pin.split("==")[0]] != pin]
    assert not differ, f"{differ}: change requirements.txt and {LOCK_IN.name}, then make pull-lock"
    makefile = (REPO / "Makefile").read_text()
    assert "pull-lock:" in makefile and "--generate-hashes" in makefile
    assert "--no-config" in makefile and "--universal" in makefile


def test_the_script_installs_the_lock_with_hashes():
    script = render(BASE)
    for name in ("ansible", "ansible-core", "jinja2", "requests", "google-auth", "cryptography"):
        assert re.search(rf"\n{name}==[^\n]*\\\n    --hash=sha256:[0-9a-f]{{64}}", script), name
    lock = script.split("cat > \"$base/requirements.txt\" << 'CLOUDTPU_PULL_EOF'\n", 1)[1]
    lock = lock.split("\nCLOUDTPU_PULL_EOF\n", 1)[0]
    assert "\nuv==" not in lock and lock.startswith("ansible==")  # uv has a venv of its own
    uv = script.split("cat > \"$base/uv-requirements.txt\" << 'CLOUDTPU_PULL_EOF'\n", 1)[1]
    assert uv.startswith(f"uv=={DEFAULT_UV_VERSION} \\\n    --hash=sha256:"), uv[:80]
    assert 'install=(--require-hashes --only-binary=:all: -r "$base/requirements.txt")' in script
    assert '-m pip install -q "${install_uv[@]}"' in script  # uv itself, hashed too
    assert '"$uv" pip install -q --python "$venv/bin/python" "${install[@]}"' in script
    assert '"$venv/bin/python" -m pip install -q "${install[@]}"' in script  # installer=pip


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ansible", "ansible==11.0.0"),
        ("ansible", "ansible"),
        ("requirements", ["requests==2.34.2"]),
        ("requirements", ["requests==2.34.2", "google-auth==2.62.2", "boto3==1.0"]),
        ("uv_version", "0.9.0"),
    ],
)
def test_another_toolchain_needs_the_unhashed_opt_in(key, value):
    message = problems(**{key: value})
    assert message.startswith(f"tpu_provision_pull_{key} is "), message
    assert f"not the version of the collection's hashed lock ({LOCK_NAME})" in message
    assert "tpu_provision_pull_unhashed=true" in message and "make pull-lock" in message
    got = pull_options({**BASE, key: value, "unhashed": True})
    assert got["ok"] and not got["hashed"], got["message"]
    assert got["lock"] == "" and got["uv_lock"] == ""
    script = render({**BASE, key: value, "unhashed": True})
    assert "hashed=''\n" in script and "--hash=sha256:" not in script
    assert 'install=("${packages[@]}")' in script and 'install_uv=("uv==$uv_version")' in script


def test_a_lock_that_cannot_be_read_or_lacks_a_pin_is_named_and_gives_no_defaults(tmp_path):
    missing = read_lock(tmp_path / "absent.txt")
    assert missing["problem"].startswith(f"the collection's lock {LOCK_NAME} could not be read")
    assert missing["problem"].endswith("reinstall it.")
    assert missing["ansible"] == "" and missing["lock"] == "" and missing["uv_lock"] == ""
    bad = tmp_path / "bad.txt"
    bad.write_text("ansible>=11\n")
    assert "'ansible>=11' is not a pinned requirement" in read_lock(bad)["problem"]
    short = tmp_path / "short.txt"
    short.write_text("ansible==11.0.0 \\\n    --hash=sha256:aa\nrequests==2.0 \\\n")
    got = read_lock(short)
    assert got["problem"] == f"the collection's lock {LOCK_NAME} lacks google-auth, uv."
    assert got["ansible"] == "ansible==11.0.0" and got["requirements"] == ("requests==2.0", "")
    assert got["lock"] == "ansible==11.0.0 \\\n    --hash=sha256:aa\nrequests==2.0 \\\n"


def test_the_defaults_given_again_and_uv_with_pip_need_no_opt_in():
    assert problems(ansible=DEFAULT_ANSIBLE, requirements=list(DEFAULT_REQUIREMENTS)) == ""
    assert problems(installer="pip", uv_version="0.9.0") == ""  # pip installs no uv
    assert "tpu_provision_pull_unhashed must be true or false" in problems(unhashed="maybe")
