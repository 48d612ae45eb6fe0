"""Pull mode of provision.yml: the pull_options filter (every variable checked, named with its
value and what is allowed; values quoted for the shell) and the startup script it feeds
(playbooks/templates/pull_startup.sh.j2): what it runs, what it keeps out of sight, shellcheck.
The script running on a worker is tests/integration/test_pull_bootstrap.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jinja2
import pytest
from ansible_collections.cloudtpu.pod.plugins.filter import pull_options as pull_options_plugin
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull_options import (
    DEFAULT_ANSIBLE,
    DEFAULT_REQUIREMENTS,
    DEFAULT_UV_VERSION,
    pull_options,
)

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "playbooks" / "templates" / "pull_startup.sh.j2"
TOKEN = "ya29.not-a-real-token"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BASE = {
    "bootstrap": "pull",
    "repo": "https://git.example.test/cloudtpu-pod.git",
    "version": COMMIT,
    "tags": "python,libtpu",
    "login_user": "tpu",
    "project": "demo-project",
    "zone": "us-central2-b",
    "nodes": ["pod-a"],
}


def render(values: dict[str, Any]) -> str:
    """The template as provision.yml renders it (Ansible's template lookup keeps trim_blocks)."""
    options = pull_options(values)
    assert options["ok"], options["message"]
    # a shell script, not HTML: nothing to autoescape
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)  # noqa: S701
    return env.from_string(TEMPLATE.read_text()).render(_pull=options)


def test_push_is_the_default_and_checks_nothing_else():
    got = pull_options({"repo": 5, "timeout": "x"})
    assert got["ok"] and got["bootstrap"] == "push" and got["pull"] is False


@pytest.mark.parametrize("value", ["Pull", "both", "", None, True])
def test_a_bad_mode_is_named_with_its_value_and_the_allowed_ones(value):
    got = pull_options({"bootstrap": value})
    assert not got["ok"]
    assert "tpu_provision_bootstrap" in got["message"]
    assert repr(value) in got["message"] and "push, pull" in got["message"]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("repo", "", "tpu_provision_pull_repo is required"),
        ("repo", "not a url", "not a git URL"),
        ("repo", "https://example.test/x.git'; rm -rf /", "not a git URL"),
        ("version", "-x", "allowed: a full commit id"),
        ("tags", "python;reboot", "tpu_provision_pull_tags"),
        ("ansible", "ansible; curl", "one pip requirement"),
        ("requirements", ["requests==1", "x y"], "tpu_provision_pull_requirements"),
        ("installer", "conda", "allowed: uv, pip"),
        ("auth_kind", "application", "allowed: machineaccount, accesstoken"),
        ("api_endpoint", "ftp://x", "an http(s) URL"),
        # the workers' inventory sends its token there: https, or http to a loopback address
        # or to a host named in tpu_provision_pull_api_http_hosts
        ("api_endpoint", "http://host.docker.internal:8571/v2", "plain http to host.docker"),
        ("api_endpoint", "http://10.0.0.5/v2", "tpu_provision_pull_api_endpoint is"),
        ("api_http_hosts", "*", 'tpu_provision_pull_api_http_hosts is "*": "*" is a pattern'),
        ("api_http_hosts", ["a", ""], "tpu_provision_pull_api_http_hosts is"),
        ("api_http_hosts", {"a": 1}, "not a list of host names"),
        ("vars", ["a"], "tpu_provision_pull_vars must be a mapping"),
        ("wait", "maybe", "tpu_provision_pull_wait must be true or false"),
        ("timeout", 0, "tpu_provision_pull_timeout"),
        ("metadata", {"startup-script": "echo hi"}, "a startup-script of its own"),
    ],
)
def test_each_pull_variable_is_checked(key, value, words):
    got = pull_options({**BASE, key: value})
    assert not got["ok"] and words in got["message"], got["message"]


@pytest.mark.parametrize(
    "endpoint",
    ["https://tpu.googleapis.com/v2", "https://10.0.0.5:8443/v2", "http://127.0.0.1:8470/v2"],
)
def test_https_endpoints_and_loopback_http_pass(endpoint):
    got = pull_options({**BASE, "api_endpoint": endpoint})
    assert got["ok"], got["message"]


DOCKER = "http://host.docker.internal:8571/v2"
HOSTS = "tpu_provision_pull_api_http_hosts"


@pytest.mark.parametrize(
    "hosts", [["host.docker.internal"], "host.docker.internal", "10.0.0.5, host.docker.internal"]
)
def test_plain_http_to_a_host_named_in_the_opt_in_passes(hosts):
    got = pull_options({**BASE, "api_endpoint": DOCKER, "api_http_hosts": hosts})
    assert got["ok"], got["message"]


@pytest.mark.parametrize(
    ("hosts", "words"),
    [
        (None, f"or to a host named in {HOSTS} (now none)"),
        ([], f"or to a host named in {HOSTS} (now none)"),
        ("", f"or to a host named in {HOSTS} (now none)"),
        (["10.0.0.5"], f"or to a host named in {HOSTS} (now 10.0.0.5)"),
        (["docker.internal"], f"or to a host named in {HOSTS} (now docker.internal)"),
        (["host.docker.internal.example"], "(now host.docker.internal.example)"),
    ],
)
def test_plain_http_to_another_host_is_refused_naming_the_opt_in(hosts, words):
    got = pull_options({**BASE, "api_endpoint": DOCKER, "api_http_hosts": hosts})
    assert not got["ok"]
    message = got["message"]
    assert message.startswith(f'tpu_provision_pull_api_endpoint is "{DOCKER}": plain http to '), (
        message
    )
    assert words in message, message
    assert f"name host.docker.internal in {HOSTS}." in message, message


@pytest.mark.parametrize(
    ("hosts", "words"),
    [
        ("*", '"*" is a pattern; name each host'),
        ("host.docker.internal,", "an entry is empty"),
        ("http://host.docker.internal:8571", "is a URL or an address range"),
        ("host.docker.internal:8571", "has a port or brackets"),
        (["host.docker.internal\n"], "is not a host name or address"),
    ],
)
def test_hostile_host_lists_are_refused_and_allow_nothing(hosts, words):
    got = pull_options({**BASE, "api_endpoint": DOCKER, "api_http_hosts": hosts})
    assert not got["ok"]
    assert got["message"].startswith(f"{HOSTS} is "), got["message"]
    assert words in got["message"] and "empty (the default) allows none." in got["message"]
    # the endpoint is refused too: a refused list names no host
    assert "tpu_provision_pull_api_endpoint is" in got["message"], got["message"]


def test_the_hosts_named_reach_the_workers_environment():
    options = {
        **BASE,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        "api_endpoint": DOCKER,
        "api_http_hosts": [" host.docker.internal", "10.0.0.5"],
    }
    got = pull_options(options)
    assert got["ok"], got["message"]
    assert "export CLOUDTPU_API_HTTP_HOSTS=host.docker.internal,10.0.0.5\n" in got["env"]
    script = render(options)
    assert f"export CLOUDTPU_API_ENDPOINT={DOCKER}\n" in script
    assert "export CLOUDTPU_API_HTTP_HOSTS=host.docker.internal,10.0.0.5\n" in script
    # none named, none written
    assert "CLOUDTPU_API_HTTP_HOSTS" not in render(BASE)


def test_push_ignores_the_host_list():
    assert pull_options({"bootstrap": "push", "api_http_hosts": "*"})["ok"]


def test_the_token_is_required_with_accesstoken_and_never_in_the_message():
    got = pull_options({**BASE, "auth_kind": "accesstoken", "access_token": "a b"})
    assert not got["ok"] and "tpu_provision_pull_access_token" in got["message"]
    assert "a b" not in got["message"]


def test_defaults_are_the_pins_of_requirements_txt():
    pins = {
        line.split("==")[0]: line.strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert pins["ansible"] == DEFAULT_ANSIBLE
    assert [pins[r.split("==")[0]] for r in DEFAULT_REQUIREMENTS] == list(DEFAULT_REQUIREMENTS)
    assert pins["uv"] == f"uv=={DEFAULT_UV_VERSION}"


def test_the_script_pulls_this_node_with_a_local_connection():
    script = render(BASE)
    assert script.startswith("#!/usr/bin/env bash\n") and "\nset -eu\n" in script
    assert "repo=https://git.example.test/cloudtpu-pod.git\n" in script
    assert f"version={COMMIT}\n" in script and "tags=python,libtpu\n" in script
    assert "pinned=1\n" in script and "hashed=1\n" in script
    assert "packages=(ansible==12.3.0 requests==2.34.2 google-auth==2.62.2)" in script
    # ansible-pull's source is the checkout checked at that commit (test_pull_checkout.py)
    assert 'ansible-pull" -U "$checkout" -C "$commit" -d "$checkout"' in script
    assert '--limit "$limit" -c local' in script and "site.yml" in script
    assert '"${nodes[0]}-w$worker"' in script and "nodes=(pod-a)" in script
    assert '"tpu_login_user": "tpu"' in script and "login_user=tpu\n" in script
    assert '"names": [\n    "pod-a"\n  ]' in script and '"plugin": "cloudtpu.pod.tpu_vm"' in script
    assert "export GCP_AUTH_KIND=machineaccount\n" in script
    assert "GCP_ACCESS_TOKEN" not in script and "CLOUDTPU_API_ENDPOINT" not in script
    assert "/var/lib/cloudtpu/pull.rc" in script or '"$state/pull.rc"' in script


def test_the_script_publishes_its_result_as_guest_attributes():
    """What module_utils/tpu_pull.py reads through the TPU API: the worker's metadata server
    gets the result of this boot (running first, then done with the exit code) and, when the
    pull failed, the end of its log before it."""
    script = render(BASE)
    url = "http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes/cloudtpu"
    assert f"guest_attributes={url}\n" in script
    assert "result_key=pull-result\n" in script and "log_key=pull-log\n" in script
    assert "-X PUT -H 'Metadata-Flavor: Google'" in script
    first = script.index('publish "$result_key" "{\\"state\\": \\"running\\"')
    assert first < script.index("retry() {")  # before anything slow: an old boot's result goes
    done = script.index('publish "$result_key" "{\\"state\\": \\"done\\", \\"rc\\": $rc')
    assert script.index('| publish "$log_key"') < done  # the log is there when done is seen
    assert "tail -n 30" in script and "tail -c 3000" in script


def test_the_token_goes_only_into_a_root_only_file():
    script = render(
        {
            **BASE,
            "auth_kind": "accesstoken",
            "access_token": TOKEN,
            "api_endpoint": "https://tpu.internal.example:8571/v2",
            "vars": {"tpu_python_version": "3.10"},
        }
    )
    lines = [i for i, line in enumerate(script.splitlines()) if TOKEN in line]
    assert len(lines) == 1, "the token appears once, in the env file's text"
    text = script.splitlines()
    block = text[: lines[0]]
    assert "umask 077" in block[-3:-1] or "umask 077" in "\n".join(block[-4:])
    assert text[lines[0]] == f"export GCP_ACCESS_TOKEN={TOKEN}"
    assert "export CLOUDTPU_API_ENDPOINT=https://tpu.internal.example:8571/v2" in script
    assert "set -x" not in script and "echo $GCP" not in script
    assert '"tpu_python_version": "3.10"' in script


def test_quotes_keep_odd_values_inert():
    script = render(
        {**BASE, "version": "feature/x.1", "unpinned": True, "vars": {"note": "a'b $(id)"}}
    )
    assert "version=feature/x.1\n" in script and "pinned=''\n" in script
    # JSON inside a quoted heredoc: nothing is expanded.
    assert '"note": "a\'b $(id)"' in script
    assert re.search(r"<< 'CLOUDTPU_PULL_EOF'\n\{\n  \"note\"", script)


def test_several_nodes_find_their_host_by_address():
    script = render({**BASE, "nodes": ["pod-a-0", "pod-a-1"]})
    assert "nodes=(pod-a-0 pod-a-1)" in script and "node_count=2" in script


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"auth_kind": "accesstoken", "access_token": TOKEN, "installer": "pip", "tags": ""},
        {"version": "main", "unpinned": True, "unhashed": True},
    ],
)
def test_shellcheck_passes_on_the_rendered_script(tmp_path, extra):
    path = tmp_path / "startup-script"
    path.write_text(render({**BASE, **extra}))
    done = subprocess.run(
        ["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_filter_is_the_function() -> None:
    assert pull_options_plugin.FilterModule().filters() == {"pull_options": pull_options}
