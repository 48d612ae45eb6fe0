"""Fault injection: scripted error answers, latency and unreachable locations.

A fault plan is JSON (or YAML in a state file)::

    {
      "rules": [
        {"path": "projects/*/locations/-/nodes", "method": "GET", "statuses": [503, 503]},
        {"path": "projects/locked/*", "error": "SERVICE_DISABLED"},
        {"path": "projects/p/*", "error": "PERMISSION_DENIED", "times": 1},
        {"path": "*", "latency": 0.05},
        {"path": "projects/p/locations/z/nodes/n", "method": "GET", "after": 1, "drop": true}
      ],
      "unreachable": {"my-project": ["us-east1-d"]}
    }

``path`` is a shell-style pattern matched against the request path after the API version
(``projects/p/locations/z/nodes``), ``method`` optionally restricts the HTTP verb. A rule with
``statuses`` answers those codes in order, one per matching request, then stops matching. A rule
with ``error`` (SERVICE_DISABLED, PERMISSION_DENIED, UNAUTHENTICATED or an HTTP code) answers it
``times`` times (default: always). A rule with ``latency`` delays every matching request by that
many seconds. A rule with ``drop`` carries the request out and sends no answer: the connection
is closed, which the client sees as it sees a timeout (the call may have been carried out).
``after`` lets that many matching requests through untouched before the rule applies (the
second GET of a node, say), and ``times`` bounds every kind of rule: a rule applied that many
times stops matching. ``unreachable`` lists zones, per project, that list calls report as
unreachable.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from typing import Any

ERROR_KINDS = ("SERVICE_DISABLED", "PERMISSION_DENIED", "UNAUTHENTICATED")


@dataclass
class Rule:
    path: str = "*"
    method: str | None = None
    statuses: list[int] = field(default_factory=list)
    error: str | int | None = None
    times: int | None = None
    latency: float = 0.0
    drop: bool = False
    after: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        known = {"path", "method", "statuses", "error", "times", "latency", "drop", "after"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault rule keys: {sorted(unknown)}")
        error = data.get("error")
        if isinstance(error, str) and error.isdigit():
            error = int(error)
        if isinstance(error, str) and error not in ERROR_KINDS:
            raise ValueError(
                f"fault error must be one of {ERROR_KINDS} or an HTTP code, not {error!r}"
            )
        return cls(
            path=str(data.get("path", "*")).lstrip("/"),
            method=str(data["method"]).upper() if data.get("method") else None,
            statuses=[int(s) for s in data.get("statuses") or []],
            error=error,
            times=int(data["times"]) if data.get("times") is not None else None,
            latency=float(data.get("latency") or 0.0),
            drop=bool(data.get("drop")),
            after=int(data.get("after") or 0),
        )

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method != method:
            return False
        return fnmatch.fnmatchcase(path, self.path)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.method:
            out["method"] = self.method
        if self.statuses:
            out["statuses"] = list(self.statuses)
        if self.error is not None:
            out["error"] = self.error
        if self.times is not None:
            out["times"] = self.times
        if self.latency:
            out["latency"] = self.latency
        if self.drop:
            out["drop"] = True
        if self.after:
            out["after"] = self.after
        return out


class NoAnswer(Exception):
    """A request that a ``drop`` rule matched: carried out, its answer not sent."""


@dataclass
class Decision:
    """What the fault plan says about one request."""

    latency: float = 0.0
    status: int | None = None
    error: str | None = None
    drop: bool = False

    @property
    def answered(self) -> bool:
        return self.status is not None or self.error is not None or self.drop


class FaultPlan:
    """Thread-safe set of fault rules; each request consumes at most one status/error rule."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self.rules: list[Rule] = []
        self.unreachable: dict[str, list[str]] = {}
        if data:
            self.load(data)

    def load(self, data: dict[str, Any]) -> None:
        unknown = set(data) - {"rules", "unreachable"}
        if unknown:
            raise ValueError(f"unknown fault plan keys: {sorted(unknown)}")
        rules = [Rule.from_dict(rule) for rule in data.get("rules") or []]
        unreachable = {
            str(p): [str(z) for z in zones] for p, zones in (data.get("unreachable") or {}).items()
        }
        with self._lock:
            self.rules = rules
            self.unreachable = unreachable

    def clear(self) -> None:
        with self._lock:
            self.rules = []
            self.unreachable = {}

    def decide(self, method: str, path: str) -> Decision:
        decision = Decision()
        with self._lock:
            for rule in self.rules:
                if not rule.matches(method, path):
                    continue
                if rule.after > 0:
                    rule.after -= 1
                    continue
                if rule.times is not None and rule.times <= 0:
                    continue
                decision.latency += rule.latency
                answers = bool(rule.statuses) or rule.error is not None or rule.drop
                if answers and decision.answered:
                    continue
                if rule.statuses:
                    decision.status = rule.statuses.pop(0)
                elif isinstance(rule.error, int):
                    decision.status = rule.error
                elif rule.error is not None:
                    decision.error = rule.error
                elif rule.drop:
                    decision.drop = True
                if rule.times is not None:
                    rule.times -= 1
        return decision

    def unreachable_zones(self, project: str) -> list[str]:
        with self._lock:
            return list(self.unreachable.get(project, []))

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "rules": [rule.to_dict() for rule in self.rules],
                "unreachable": {p: list(z) for p, z in self.unreachable.items()},
            }
