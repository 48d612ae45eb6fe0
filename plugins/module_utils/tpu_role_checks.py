# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The one engine of the roles' preflights: a table of rules per role, over the shared checks.

A role's preflight asks ``query('cloudtpu.pod.role_problems')`` for the problems of its
variables; the lookup hands this engine the role's name and a :class:`RoleValues`, which
resolves a variable only when a rule reads it. A role's table (``tpu_role_rules.py``) is a
tuple of stages, each a tuple of rules; a rule reads values and returns ``''``, one sentence or
a list of sentences, each naming the variable, its value (never a secret's) and what is
allowed. The first stage with a problem is the answer, so a later stage (the nfs role's look at
the pod) runs only on variables that passed.

The helpers below make the rules that several roles share (numbers, paths, booleans, a choice,
a list of names) out of the collection's checks in ``tpu_checks.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

from ansible.module_utils.parsing.convert_bool import boolean as to_bool
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    boolean_problem,
    number_problem,
    path_problem,
)

Problems = Union[str, list]
Rule = Callable[["RoleValues"], Problems]
Stages = tuple


class RoleValues:
    """A role's variables, each resolved once, when a rule first reads it.

    ``get(name)`` returns the value (raises ``KeyError`` when the variable is not defined);
    ``login()`` returns the login contract (the ``cloudtpu.pod.login`` lookup's mapping).
    """

    def __init__(
        self, get: Callable[[str], Any], login: Callable[[], Mapping[str, Any]] | None = None
    ) -> None:
        self._get = get
        self._login = login
        self._seen: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._seen:
            self._seen[name] = self._get(name)
        return self._seen[name]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    @property
    def login(self) -> Mapping[str, Any]:
        if "login()" not in self._seen:
            if self._login is None:
                raise KeyError("login")
            self._seen["login()"] = self._login()
        return self._seen["login()"]


# What any role's rules may read besides its options and the facts its table names.
CONTEXT = ("inventory_hostname", "hostvars", "tpu_node", "ansible_check_mode")


def readable_names(options: Iterable[str], internal: Iterable[str] = ()) -> frozenset:
    """The names a role's rules may read: its options (the argument spec, the contract), the
    role's own facts its table names, and ``CONTEXT``."""
    return frozenset((*options, *internal, *CONTEXT))


def run_stages(stages: Stages, values: RoleValues) -> list[str]:
    """The problems of the first stage that has any, in the order of its rules."""
    for stage in stages:
        found: list[str] = []
        for rule in stage:
            answer = rule(values)
            found.extend([answer] if isinstance(answer, str) else list(answer))
        found = [problem for problem in found if problem]
        if found:
            return found
    return []


# --- what several roles' rules are made of -----------------------------------------------


def shown(value: Any) -> str:
    """A value that should be text, as a message shows it: its text, quoted (shortened when
    long), as Jinja's ``value | string | to_json`` would."""
    return _shown(value if isinstance(value, str) else str(value))


def shown_data(value: Any) -> str:
    """A list or mapping as a message shows it: JSON (shortened when long)."""
    return _shown(value)


def type_name(value: Any) -> str:
    """The YAML-ish type of a value, as Ansible's type_debug names it (str, int, float...)."""
    for kind in (bool, int, float, str, list, dict):
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__


def matches(value: Any, pattern: str) -> bool:
    """The whole of a string value matches (what the cloudtpu.pod.fullmatch test says)."""
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def is_list(value: Any) -> bool:
    """A YAML list (not a string, not a mapping)."""
    return isinstance(value, (list, tuple))


def has_dot_parts(value: Any) -> bool:
    """A path with a '.' or '..' part."""
    return re.search(r"(^|/)\.\.?(/|$)", str(value)) is not None


def number(name: str, minimum: float, maximum: float, note: str = "") -> Rule:
    """``name`` is a whole number from ``minimum`` to ``maximum``."""

    def rule(values: RoleValues) -> str:
        problem = number_problem(values[name], name, minimum=minimum, maximum=maximum)
        return problem + note if problem and note else problem

    return rule


def numbers(*limits: tuple[str, float, float]) -> tuple[Rule, ...]:
    """Several number rules, (name, minimum, maximum) each."""
    return tuple(number(*limit) for limit in limits)


def apt_numbers(role: str, lock: bool = False) -> tuple[Rule, ...]:
    """The bounds of the apt step's options of a role (tpu_<role>_apt_*), the same everywhere."""
    prefix = f"tpu_{role}_apt_"
    limits = [(prefix + "retries", 0, 100), (prefix + "cache_valid_time", 0, 31536000)]
    if lock:
        limits.insert(0, (prefix + "lock_timeout", 0, 3600))
    return numbers(*limits)


def path(name: str, **rules: Any) -> Rule:
    """``name`` is a path the shared path check accepts, with per-variable ``rules``."""
    return lambda values: path_problem(values[name], name, **rules)


def boolean(*names: str) -> tuple[Rule, ...]:
    """Each of ``names`` is true or false as Ansible's bool reads it."""
    return tuple((lambda values, name=name: boolean_problem(values[name], name)) for name in names)


def one_of(name: str, choices: Iterable[str]) -> Rule:
    """``name`` is one of ``choices`` (strings, exactly)."""
    allowed = list(choices)

    def rule(values: RoleValues) -> str:
        value = values[name]
        if isinstance(value, str) and value in allowed:
            return ""
        return f"{name} must be one of {', '.join(allowed)}; got {shown(value)}."

    return rule


BOOL_WORDS = ("true", "false", "yes", "no", "1", "0", "on", "off")


def switch(name: str, words: Iterable[str] = ("auto", *BOOL_WORDS)) -> Rule:
    """``name``, as lower-case text, is one of ``words`` (auto, or true or false)."""
    allowed = list(words)

    def rule(values: RoleValues) -> str:
        value = values[name]
        if str(value).lower() in allowed:
            return ""
        return f"{name} is {shown(value)}; allowed: auto, true or false."

    return rule


def names_list(name: str, pattern: str, what: str, non_empty: bool = False) -> Rule:
    """``name`` is a list whose every entry (as text) matches ``pattern``; ``what`` says what
    is allowed, in words."""

    def rule(values: RoleValues) -> str:
        value = values[name]
        if is_list(value) and all(matches(str(item), pattern) for item in value):
            if value or not non_empty:
                return ""
        return f"{name} must be {what}; got {shown_data(value)}."

    return rule


def ca_bundle(name: str) -> Rule:
    """``name`` is empty or the absolute path of a PEM file on the worker."""

    def rule(values: RoleValues) -> str:
        value = values[name]
        if value == "" or (matches(value, r"/\S+") and not has_dot_parts(value)):
            return ""
        return (
            f"{name} is {shown(value)}; allowed: empty or the absolute path (without spaces or"
            " '..') of a PEM file on the worker."
        )

    return rule


def venv(values: RoleValues) -> str:
    """The login contract's venv: inside the login home or /opt."""
    login = values.login
    return path_problem(login["venv"], "tpu_venv_path", under=[login["home"], "/opt"])


def flag(value: Any) -> bool:
    """A role's own true/false fact, as Ansible's bool reads it."""
    return to_bool(value, strict=False)


def login_user(values: RoleValues) -> str:
    """The login contract names a user."""
    return "" if values.login["user"] else "The login user is empty."
