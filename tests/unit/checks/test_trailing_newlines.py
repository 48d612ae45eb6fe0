"""A trailing line break does not slip through a check.

In Python, ``$`` matches before a final "\\n", so a pattern ``^...$`` used with re.match once let
"FOO\\n" pass as an environment variable name and "tpu\\n" as a login user. Every check of a
value that is used as given (not trimmed first) anchors with fullmatch or ``\\Z``: one row per
kind of value, the good value accepted and the same value with "\\n" refused, by name.

Values that are trimmed on purpose before they are used (numbers and booleans from ``-e``,
comma-separated lists, sync's repository and version) are not in the table: what is used there
has no line break left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.pull_options import pull_options
from ansible_collections.cloudtpu.pod.plugins.filter.python_source import python_source
from ansible_collections.cloudtpu.pod.plugins.filter.run_environment import run_environment
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    base_url_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    device_glob_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_checks import (
    hostname_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_login import (
    LoginError,
    check_user,
    resolve,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import gcp_name_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    network_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_queued import schedule_problems
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import (
    RUN_ID_RE,
    run_id_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_forwards import (
    forwards_problem,
)

PULL = {
    "bootstrap": "pull",
    "repo": "https://example.org/me/pod.git",
    "version": "0123456789abcdef0123456789abcdef01234567",
    "login_user": "tpu",
    "project": "demo-project",
    "zone": "us-central2-b",
    "nodes": ["pod-a"],
}


def _raised(call: Callable[[], Any], errors: tuple[type[Exception], ...]) -> str:
    try:
        call()
    except errors as exc:
        return str(exc)
    return ""


def _pull(key: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        got = pull_options({**PULL, key: value})
        return "" if got["ok"] else got["message"]

    return check


def _env_name(value: str) -> str:
    return _raised(lambda: run_environment({value: "1"}), (AnsibleFilterError,))


def _login_user(value: str) -> str:
    return _raised(lambda: check_user("tpu_login_user", value), (LoginError,))


def _login_python(value: str) -> str:
    variables = {"tpu_login_user": "tpu", "tpu_python_version": value}
    return _raised(lambda: resolve(variables), (LoginError,))


def _python_source(value: str) -> str:
    got = python_source(value, "Ubuntu", "22.04", "auto")
    return "" if got["ok"] else got["message"]


def _schedule(name: str) -> Callable[[str], str]:
    return lambda value: " ".join(
        schedule_problems({"tier": "flex_start", "max_run_duration": "3600s", name: value})
    )


def _forward_host(value: str) -> str:
    return forwards_problem([{"local": 8080, "remote": 80, "host": value}])


def _record_run_id(value: str) -> str:
    return "" if RUN_ID_RE.match(value) else "a run record's run_id is refused"


# kind, check (the message, '' when accepted), a good value, what the message names
KINDS = [
    ("env name", _env_name, "XLA_FLAGS", "tpu_run_env"),
    ("login user", _login_user, "tpu", "tpu_login_user"),
    ("login python version", _login_python, "3.10", "tpu_python_version"),
    ("python role version", _python_source, "3.10", "tpu_python_version"),
    ("project", lambda v: gcp_name_problem(v, "tpu_x_project"), "my-project", "tpu_x_project"),
    ("zone", lambda v: gcp_name_problem(v, "tpu_x_zone", "zone"), "us-east5-a", "tpu_x_zone"),
    ("zones", lambda v: gcp_name_problem([v], "tpu_x_zones", "zone", True), "us-east5-a", "zones"),
    ("duration", _schedule("max_run_duration"), "3600s", "max_run_duration"),
    ("time", _schedule("valid_after_time"), "2030-01-31T08:00:00Z", "valid_after_time"),
    ("pull repo", _pull("repo"), "https://example.org/me/pod.git", "tpu_provision_pull_repo"),
    ("pull version", _pull("version"), "0123456789abcdef0123456789abcdef01234567", "pull_version"),
    ("pull ansible", _pull("ansible"), "ansible==12.3.0", "tpu_provision_pull_ansible"),
    ("pull uv", _pull("uv_version"), "0.13.8", "tpu_provision_pull_uv_version"),
    ("pull endpoint", _pull("api_endpoint"), "https://tpu.example/v2", "pull_api_endpoint"),
    ("run id", lambda v: run_id_problem(v, "tpu_logs_run"), "20261123T143000Z-ab12", "logs_run"),
    ("run record", _record_run_id, "20261123T143000Z-ab12", "run_id"),
    ("path", lambda v: path_problem(v, "tpu_x_path"), "/opt/venv", "tpu_x_path"),
    ("device glob", lambda v: device_glob_problem(v, "tpu_x_glob"), "/dev/accel*", "tpu_x_glob"),
    ("network", lambda v: network_problem(v, "tpu_x_cidrs"), "10.0.0.0/8", "tpu_x_cidrs"),
    ("host name", hostname_problem, "{node}-w{worker_id}", "hostname"),
    ("forward service", lambda v: forwards_problem([v]), "jupyter", "tpu_ssh_config_forwards"),
    ("forward host", _forward_host, "localhost", "tpu_ssh_config_forwards"),
    ("base_url", base_url_problem, "https://tpu.googleapis.com/v2", "CLOUDTPU_API_ENDPOINT"),
]


@pytest.mark.parametrize(("kind", "check", "good", "names"), KINDS, ids=[k[0] for k in KINDS])
def test_a_trailing_line_break_is_refused(
    kind: str, check: Callable[[str], str], good: str, names: str
) -> None:
    assert check(good) == "", f"{kind}: the good value {good!r} was refused"
    message = check(good + "\n")
    assert message, f"{kind}: {good + chr(10)!r} was accepted"
    assert names in message, message


def test_the_pull_token_with_a_line_break_is_refused_without_showing_it() -> None:
    token = "ya29.not-a-real-token"
    got = pull_options({**PULL, "auth_kind": "accesstoken", "access_token": token + "\n"})
    assert not got["ok"] and "tpu_provision_pull_access_token" in got["message"]
    assert token not in got["message"]
    assert pull_options({**PULL, "auth_kind": "accesstoken", "access_token": token})["ok"]
