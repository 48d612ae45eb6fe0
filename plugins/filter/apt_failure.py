# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The message the apt step fails with: apt's own error, or that apt hung twice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DOCUMENTATION = r"""
name: apt_failure
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The message the apt step fails with
description:
  - Takes the failed result of the apt step's install (C(ansible_failed_result)). One that
    timed out (C(timedout)) is an apt run that hung in both attempts, and its processes were
    stopped; the message gives the bound of an attempt, what it is made of (the options named as
    the calling role names them) and the pod package cache in use.
  - Any other failure is apt's own, and so is the message, its C(msg) (else the whole result).
positional: attempt_timeout, lock_timeout, option, environment
options:
  _input:
    description: The failed result.
    type: dict
    required: true
  attempt_timeout:
    description: C(tpu_apt_attempt_timeout), in seconds.
    type: int
    required: true
  lock_timeout:
    description: C(tpu_apt_lock_timeout), in seconds; an attempt is bounded by the two together.
    type: int
    required: true
  option:
    description: How messages name the step's options, C(tpu_apt_) or C(tpu_<role>_apt_).
    type: str
    required: true
  environment:
    description: The environment of the step's apt runs; its C(http_proxy) is the pod package
      cache, when the step used it.
    type: dict
"""

EXAMPLES = r"""
- name: Fail, saying apt hung twice
  ansible.builtin.fail:
    msg: >-
      {{ ansible_failed_result | cloudtpu.pod.apt_failure(tpu_apt_attempt_timeout,
         tpu_apt_lock_timeout, tpu_apt__option, tpu_apt__environment) }}
"""

RETURN = r"""
_value:
  description: The message; apt's own C(msg) (or its whole result) is returned as it is.
  type: raw
"""


def _seconds(value: Any) -> int:
    """A number of seconds as Jinja's int filter reads it (0 when it is none)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def apt_failure(
    result: Mapping[str, Any],
    attempt_timeout: Any,
    lock_timeout: Any,
    option: str,
    environment: Mapping[str, Any] | None = None,
) -> Any:
    """cloudtpu.pod.apt_failure."""
    if "timedout" not in result:
        return result.get("msg", result)
    bound = _seconds(lock_timeout) + _seconds(attempt_timeout)
    proxy = (environment or {}).get("http_proxy", "not used")
    return (
        f"apt did not finish within {bound} s (tpu_apt_attempt_timeout {attempt_timeout} + "
        f"{option}lock_timeout {lock_timeout}) in two attempts; its processes were stopped. "
        f"Check the package sources and the pod package cache ({proxy})."
    )


class FilterModule:
    """cloudtpu.pod.apt_failure."""

    def filters(self) -> dict[str, Any]:
        return {"apt_failure": apt_failure}
