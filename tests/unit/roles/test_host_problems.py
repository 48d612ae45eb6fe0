"""What the python and framework roles refuse in their look at the host, word for word: the
login user (module_utils/tpu_login.py), the venv already at the venv path
(module_utils/tpu_python_venv.py) and the framework's venv and uv
(module_utils/tpu_framework_install.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.framework_host_problem import (
    FilterModule as FrameworkHost,
)
from ansible_collections.cloudtpu.pod.plugins.filter.login_user_problem import (
    FilterModule as LoginUser,
)
from ansible_collections.cloudtpu.pod.plugins.filter.python_venv_found import (
    FilterModule as VenvFound,
)
from ansible_collections.cloudtpu.pod.plugins.filter.python_venv_problem import (
    FilterModule as VenvProblem,
)

LOGIN = {"user": "tpu", "home": "/home/tpu", "venv": "/home/tpu/.venv310", "source": "ansible_user"}
HOST = "pod-w1"
UV = "/opt/cloudtpu/uv/bin/uv"


def entry(home: str = "/home/tpu") -> list:
    return ["tpu", "x", 1000, 1000, "", home, "/bin/bash"]


user_problem = LoginUser().filters()["login_user_problem"]
venv_found = VenvFound().filters()["python_venv_found"]
venv_problem = VenvProblem().filters()["python_venv_problem"]
framework_problem = FrameworkHost().filters()["framework_host_problem"]


@pytest.mark.parametrize("home", ["/home/tpu", "/home/tpu/", "/home/tpu//"])
def test_the_login_user_with_its_home_fits(home) -> None:
    assert user_problem(LOGIN, HOST, entry(home)) == ""


def test_no_such_user_with_the_home() -> None:
    assert user_problem(LOGIN, HOST, None) == (
        "The login user is 'tpu' (from ansible_user) with home /home/tpu, but pod-w1 has no"
        " such user. Set tpu_login_user (or ansible_user) to the user who logs in, and"
        " tpu_login_home when the home is not /home/<user>."
    )


def test_another_home() -> None:
    assert user_problem(LOGIN, HOST, entry("/srv/tpu/")) == (
        "The login user is 'tpu' (from ansible_user) with home /home/tpu, but pod-w1 says its"
        " home is /srv/tpu/. Set tpu_login_user (or ansible_user) to the user who logs in, and"
        " tpu_login_home when the home is not /home/<user>."
    )


def test_without_the_home_only_the_user_counts() -> None:
    assert user_problem(LOGIN, HOST, entry("/srv/tpu"), home=False) == ""
    assert user_problem(LOGIN, HOST, None, home=False) == (
        "The login user is 'tpu' (from ansible_user), but pod-w1 has no such user. Set"
        " tpu_login_user (or ansible_user) to the user who logs in."
    )


@pytest.mark.parametrize(
    ("cfg", "found"),
    [
        (None, ""),
        ("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n", "3.10"),
        ("home = /usr/bin\nversion_info = 3.12.3.final.0\n", "3.12"),
        ("version=3.11.2", "3.11"),
        ("home = /usr/bin\n", "unknown"),
        ("", "unknown"),
        ("  version = 3.10.12\n", "unknown"),  # not at the start of a line
    ],
)
def test_the_venvs_python_from_pyvenv_cfg(cfg, found) -> None:
    assert venv_found(cfg) == found


@pytest.mark.parametrize("found", ["", "3.10"])
def test_no_venv_or_one_of_the_wanted_python_fits(found) -> None:
    assert venv_problem(found, "3.10", LOGIN["venv"]) == ""


@pytest.mark.parametrize("found", ["3.12", "unknown"])
def test_a_venv_of_another_python_is_refused(found) -> None:
    assert venv_problem(found, "3.10", LOGIN["venv"]) == (
        f"The venv path /home/tpu/.venv310 already holds a venv of Python {found}, but"
        " tpu_python_version is '3.10'. The role never replaces a venv: move it away, or set"
        " tpu_venv_path to another path."
    )


def test_the_framework_needs_the_user_first() -> None:
    found = {"passwd": None, "python": False, "uv": False}
    assert framework_problem(found, LOGIN, HOST, UV) == user_problem(LOGIN, HOST, None, home=False)


TAIL = (
    ": run cloudtpu.pod.python first (it makes the venv and installs uv), or point"
    " tpu_venv_path / tpu_framework_uv_bin at what exists."
)


@pytest.mark.parametrize(
    ("python", "uv", "message"),
    [
        (False, False, "The venv /home/tpu/.venv310 has no bin/python" + TAIL),
        (False, True, "The venv /home/tpu/.venv310 has no bin/python" + TAIL),
        (True, False, f"tpu_framework_uv_bin {UV} does not exist" + TAIL),
        (True, True, ""),
    ],
)
def test_the_framework_needs_the_venv_then_uv(python, uv, message) -> None:
    found = {"passwd": entry(), "python": python, "uv": uv}
    assert framework_problem(found, LOGIN, HOST, UV) == message


def test_bad_inputs_are_filter_errors() -> None:
    with pytest.raises(AnsibleFilterError, match="login_user_problem"):
        user_problem({}, HOST, None)
    with pytest.raises(AnsibleFilterError, match="python_venv_found"):
        venv_found(3.10)
    with pytest.raises(AnsibleFilterError, match="framework_host_problem"):
        framework_problem({}, LOGIN, HOST, UV)
