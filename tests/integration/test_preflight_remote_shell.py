"""remote_shell refuses bad input before it changes anything, naming the variable and value."""

from __future__ import annotations

import pytest

from tests.integration.playbook_helpers import LOCAL_PYTHON, error_text
from tests.role_runner import run_role

CASES = [
    # (variables, the variable the message must name, the bad value it must show)
    ({"tpu_remote_shell_locale": "en_US.ISO-8859-1"}, "tpu_remote_shell_locale", "ISO-8859-1"),
    ({"tpu_remote_shell_locale": "POSIX"}, "tpu_remote_shell_locale", "POSIX"),
    ({"tpu_remote_shell_locale": "en_US.utf8 ; rm"}, "tpu_remote_shell_locale", "utf8 ; rm"),
    (
        {"tpu_remote_shell_byobu_on_login": "always"},
        "tpu_remote_shell_byobu_on_login",
        "always",
    ),
    (
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_remote_shell_byobu": False},
        "tpu_remote_shell_byobu",
        "enable",
    ),
    (
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_login_user": "Bad User"},
        "tpu_login_user",
        "Bad User",
    ),
    (
        {"tpu_remote_shell_byobu_on_login": "enable", "tpu_login_user": "nosuchuser-x9"},
        "tpu_login_user",
        "nosuchuser-x9",
    ),
    ({"tpu_remote_shell_mosh": "maybe"}, "tpu_remote_shell_mosh", "maybe"),
    (
        {"tpu_remote_shell_apt_cache_valid_time": "soon"},
        "tpu_remote_shell_apt_cache_valid_time",
        "soon",
    ),
    ({"tpu_remote_shell_apt_retries": "often"}, "tpu_remote_shell_apt_retries", "often"),
    ({"tpu_remote_shell_apt_retries": 500}, "tpu_remote_shell_apt_retries", "500"),
]


@pytest.mark.parametrize(("extra", "variable", "value"), CASES, ids=[c[1] for c in CASES])
def test_bad_input_is_refused(extra, variable, value):
    result = run_role("remote_shell", extra, hostvars=LOCAL_PYTHON)
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, f"accepted {extra}:\n{out}"
    assert variable in error, f"the error does not name {variable}:\n{error or out}"
    assert value in error, f"the error does not show the value {value!r}:\n{error or out}"
    # Refused in validation, before the first change: no install task ran.
    assert "Install mosh, byobu and locales" not in out, out
