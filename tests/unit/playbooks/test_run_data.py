"""A run's user text and secrets (module_utils/tpu_run_data, the as_data lookup): the command
and tpu_run_env given with -e are data that Ansible never renders, and the values of
tpu_run_env show nowhere. The playbooks themselves run against a pod in
tests/integration/test_run_playbook.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible import context
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import ImmutableDict
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar, is_trusted_as_template, trust_as_template
from ansible.utils.vars import load_extra_vars
from ansible_collections.cloudtpu.pod.plugins.filter.run_environment import run_environment
from ansible_collections.cloudtpu.pod.plugins.filter.run_options import run_options
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import (
    as_data,
    secret_names,
    shown,
)

COMMAND = "docker ps --format {{.Names}} && echo {{ lookup('pipe', 'touch /tmp/x') }}"


def test_as_data_drops_the_trust_that_makes_text_a_template() -> None:
    given = {"cmd": trust_as_template(COMMAND), "env": {"A": trust_as_template("{{ a }}"), "N": 1}}
    assert is_trusted_as_template(given["cmd"])
    got = as_data(given)
    assert got == {"cmd": COMMAND, "env": {"A": "{{ a }}", "N": 1}}
    assert not is_trusted_as_template(got["cmd"]) and type(got["cmd"]) is str
    assert not is_trusted_as_template(got["env"]["A"])
    assert as_data([trust_as_template("x"), None, True]) == ["x", None, True]


def test_a_rendered_command_keeps_its_braces() -> None:
    """What the wrapper template does with the command: the text is inserted, not evaluated."""
    templar = Templar(loader=DataLoader(), variables={"cmd": as_data(trust_as_template(COMMAND))})
    assert templar.template(trust_as_template("{{ cmd }}")) == COMMAND
    # the same text, trusted as extra variables are, is a template
    templar = Templar(loader=DataLoader(), variables={"cmd": trust_as_template("{{ 1 + 1 }}")})
    assert templar.template(trust_as_template("{{ cmd }}")) == 2


def test_run_options_keeps_the_command_as_data_and_the_environment_names_only() -> None:
    got = run_options(
        {"cmd": trust_as_template(COMMAND), "env": {"HF_TOKEN": "hf_canary", "B": "2"}}
    )
    assert got["ok"], got
    assert got["cmd"] == got["label"] == COMMAND
    assert not is_trusted_as_template(got["cmd"]) and not is_trusted_as_template(got["label"])
    assert got["env_names"] == ["B", "HF_TOKEN"]
    assert "hf_canary" not in repr(got)


@pytest.mark.parametrize(
    ("value", "shows"),
    [
        ("HF_TOKEN=hf_canary", "got a string (not shown: the values of tpu_run_env are secret)"),
        (["hf_canary"], "got a list"),
        (7, "got a number"),
    ],
)
def test_a_bad_environment_is_refused_without_its_value(value: Any, shows: str) -> None:
    with pytest.raises(AnsibleFilterError) as raised:
        run_environment(value)
    assert shows in str(raised.value.message)
    assert "canary" not in str(raised.value.message) and "7" not in str(raised.value.message)
    refused = run_options({"cmd": "hostname", "env": value})
    assert not refused["ok"] and "tpu_run_env must be a mapping" in refused["message"]
    assert "canary" not in repr(refused)


def test_secret_names_and_shown() -> None:
    assert secret_names({"B": "x", "A": "y"}) == ["A", "B"]
    assert secret_names("A=1") == []
    assert shown("tpu_run_env", {"A": "s"}) == (
        "a mapping of ['A'] (values not shown: they are secret)"
    )
    assert shown("cmd", "a b") == "'a b'"


@pytest.fixture
def extra_vars(monkeypatch: pytest.MonkeyPatch):
    """Extra variables as ansible-playbook parses them from its -e options (trusted text)."""

    def given(*options: str) -> None:
        trusted = tuple(trust_as_template(option) for option in options)
        monkeypatch.setattr(context, "CLIARGS", ImmutableDict(extra_vars=trusted))
        monkeypatch.delattr(load_extra_vars, "extra_vars", raising=False)

    yield given
    if hasattr(load_extra_vars, "extra_vars"):
        del load_extra_vars.extra_vars


def _lookup(variables: dict[str, Any], *names: str, **options: Any) -> list[Any]:
    loader = DataLoader()
    templar = Templar(loader=loader, variables=variables)
    lookup = lookup_loader.get("cloudtpu.pod.as_data", loader=loader, templar=templar)
    return lookup.run(list(names), variables=variables, **options)


def test_the_lookup_reads_extra_variables_as_given(extra_vars, tmp_path) -> None:
    marker = tmp_path / "pwned"
    pipe = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    file = tmp_path / "vars.json"
    file.write_text(json.dumps({"tpu_run_env": {"X": pipe}}))
    extra_vars(f"cmd='echo {{{{.Names}}}} {pipe}'", f"@{file}")
    variables = load_extra_vars(DataLoader())
    assert is_trusted_as_template(variables["cmd"]), "extra variables are templates to Ansible"
    got = _lookup(variables, "cmd", "tpu_run_env", "_raw_params")
    assert got == [f"echo {{{{.Names}}}} {pipe}", {"X": pipe}, None]
    assert not is_trusted_as_template(got[0]) and not is_trusted_as_template(got[1]["X"])
    assert not marker.exists()


def test_the_lookup_renders_what_a_playbook_sets(extra_vars) -> None:
    extra_vars()
    variables = {
        "recorded": "python train.py {{.Names}}",
        "cmd": trust_as_template("{{ recorded }}"),
    }
    assert _lookup(variables, "cmd") == ["python train.py {{.Names}}"]
    assert _lookup(variables, "tpu_run_env", default={}) == [{}]
