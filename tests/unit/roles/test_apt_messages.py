"""What the apt step says (plugins/filter/apt_guard_report.py, plugins/filter/apt_failure.py):
how long its guard waited for the package locks and what the dpkg repair finished, and the
message it fails with."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.filter.apt_failure import apt_failure
from ansible_collections.cloudtpu.pod.plugins.filter.apt_guard_report import apt_guard_report

WAITED = "package locks free after 42s"
INTERRUPTED = [
    WAITED,
    "journal 0003",
    "audit:  The following packages are only half configured:",
    "audit:  libfoo1   a library",
    "dpkg --configure -a:",
    "Setting up libfoo1 (1.0-1) ...",
    "Setting up foo (1.0-1) ...",
    "Processing triggers for man-db ...",
]


def test_a_wait_alone_is_one_line() -> None:
    assert apt_guard_report({"stdout_lines": [WAITED], "changed": False}) == [
        "Waited for another apt/dpkg run: package locks free after 42s"
    ]


def test_a_repair_names_what_was_interrupted_and_what_it_set_up() -> None:
    got = apt_guard_report({"stdout_lines": INTERRUPTED, "changed": True})
    assert got == [
        "Waited for another apt/dpkg run: package locks free after 42s",
        "dpkg had been interrupted (journal 0003; audit:  The following packages are only half "
        "configured:; audit:  libfoo1   a library); `dpkg --configure -a` finished it: "
        "Setting up libfoo1 (1.0-1) ...; Setting up foo (1.0-1) ...",
    ]


def test_check_mode_says_a_real_run_repairs() -> None:
    lines = INTERRUPTED[:3]
    got = apt_guard_report({"stdout_lines": lines, "changed": False})
    assert got[1] == (
        "dpkg had been interrupted (journal 0003; audit:  The following packages are only half "
        "configured:); a real run finishes it with `dpkg --configure -a`."
    )


def test_only_lines_that_start_so_count() -> None:
    lines = [WAITED, "  journal 0001", "audit: one space", "audit:  two  ", " Setting up x"]
    got = apt_guard_report({"stdout_lines": lines, "changed": True})
    assert got[1] == "dpkg had been interrupted (audit:  two); `dpkg --configure -a` finished it: "


def test_apt_s_own_error_is_given_as_it_is() -> None:
    assert apt_failure({"failed": True, "msg": "E: Unable to locate package nope"}, 600, 300, "x")
    assert apt_failure({"msg": "no such package"}, 600, 300, "tpu_apt_") == "no such package"
    result = {"failed": True, "rc": 100}
    assert apt_failure(result, 600, 300, "tpu_apt_") is result


def test_a_hang_says_the_bound_and_the_cache() -> None:
    got = apt_failure({"timedout": {"period": 900}}, 600, "300", "tpu_base_apt_")
    assert got == (
        "apt did not finish within 900 s (tpu_apt_attempt_timeout 600 + tpu_base_apt_lock_timeout "
        "300) in two attempts; its processes were stopped. Check the package sources and the pod "
        "package cache (not used)."
    )
    proxied = apt_failure(
        {"timedout": None}, "600", 0, "tpu_apt_", {"http_proxy": "http://10.0.0.2:3142"}
    )
    assert proxied.startswith("apt did not finish within 600 s (tpu_apt_attempt_timeout 600 + ")
    assert proxied.endswith("pod package cache (http://10.0.0.2:3142).")
