"""The lookup cloudtpu.pod.role_digest: every option of the calling role's argument spec, the
facts and an extra value, digested as the filter cloudtpu.pod.state_digest digests them; and
every role of the collection that records its state takes its digest from it."""

from __future__ import annotations

import importlib
from pathlib import Path
from unittest import mock

import pytest
from ansible.errors import AnsibleLookupError
from ansible_collections.cloudtpu.pod.plugins.module_utils.state_digest import state_digest

lookup = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.lookup.role_digest")
REPO = Path(__file__).resolve().parents[3]
SPEC = """---
argument_specs:
  main:
    options:
      tpu_x_size: {type: int, default: 3}
      tpu_x_name: {type: str}
"""


def digest(variables: dict, **kwargs) -> str:
    module = lookup.LookupModule()
    module._templar = mock.MagicMock(template=lambda value: value)
    return module.run([], variables, **kwargs)[0]


@pytest.fixture
def role(tmp_path: Path) -> Path:
    (tmp_path / "roles" / "x" / "meta").mkdir(parents=True)
    (tmp_path / "roles" / "x" / "meta" / "argument_specs.yml").write_text(SPEC)
    return tmp_path / "roles" / "x"


def test_the_options_of_the_spec_facts_and_extra_as_the_filter_digests_them(role: Path) -> None:
    facts = {"distribution": "Ubuntu", "architecture": "x86_64"}
    variables = {"role_path": str(role), "tpu_x_size": 4, "other": 1, "ansible_facts": facts}
    found = digest(variables, extra=["tpu"])
    # an option without a value counts as null; variables outside the spec do not count
    assert found == state_digest(
        {"tpu_x_size": 4, "tpu_x_name": None}, str(role), facts=facts, extra=["tpu"]
    )
    assert found == digest({**variables, "other": 2}, extra=["tpu"])
    assert found != digest({**variables, "tpu_x_name": "a"}, extra=["tpu"])
    assert found != digest(variables, extra=["ana"])


def test_outside_a_role_or_without_a_spec_it_says_so(role: Path) -> None:
    with pytest.raises(AnsibleLookupError, match="only in a role"):
        digest({})
    with pytest.raises(AnsibleLookupError, match=r"argument_specs\.yml"):
        digest({"role_path": str(role.parent)})


def test_every_role_that_records_its_state_digests_with_the_lookup() -> None:
    recording = sorted(
        path.parent.parent.name
        for path in REPO.glob("roles/*/tasks/*.yml")
        if "state: record" in path.read_text(encoding="utf-8")
    )
    assert len(recording) >= 6, recording
    for name in recording:
        text = (REPO / "roles" / name / "vars" / "main.yml").read_text(encoding="utf-8")
        assert "lookup('cloudtpu.pod.role_digest'" in text, name
        assert "argument_specs.yml" not in text, name
