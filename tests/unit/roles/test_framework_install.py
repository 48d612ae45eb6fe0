"""The framework role's install worked out in Python (module_utils/tpu_framework_install.py):
the installer's options, the specifiers and command lines, and the dry run's reading."""

from __future__ import annotations

import json

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.framework_installer import (
    FilterModule as Installer,
)
from ansible_collections.cloudtpu.pod.plugins.filter.framework_plan import FilterModule as Plan
from ansible_collections.cloudtpu.pod.plugins.filter.framework_specs import FilterModule as Specs
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import (
    installer,
    plan,
    specs,
)

VENV = "/home/tpu/.venv310"
UV = "/opt/cloudtpu/uv/bin/uv"


def test_uv_with_every_index_option() -> None:
    how = installer(
        "uv",
        VENV,
        "jax",
        UV,
        index_url="https://mirror/simple",
        extra_index_urls=["https://extra/simple"],
        find_links=["/wheels"],
        ca_bundle="/etc/corp.pem",
    )
    assert how["python"] == f"{VENV}/bin/python"
    assert how["index"] == [
        "--default-index",
        "https://mirror/simple",
        "--index=https://extra/simple",
        "--find-links=/wheels",
    ]
    assert how["pip_index"] == [
        "--index-url",
        "https://mirror/simple",
        "--extra-index-url=https://extra/simple",
        "--find-links=/wheels",
    ]
    assert how["env"] == {
        "UV_SYSTEM_CERTS": "1",
        "UV_NO_PROGRESS": "1",
        "SSL_CERT_FILE": "/etc/corp.pem",
    }
    assert how["pip_env"]["PIP_CERT"] == "/etc/corp.pem"
    assert how["head"] == [UV, "pip", "install", "--python", f"{VENV}/bin/python"]
    assert how["newest"][:3] == [UV, "pip", "compile"]
    assert how["newest"][-1] == "-" and "--index=https://extra/simple" in how["newest"]


def test_pip_without_index_options_uses_the_system_trust_store() -> None:
    how = installer("pip", VENV, "torch_xla", UV)
    assert how["index"] == how["pip_index"] == []
    assert how["env"] == {
        "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    assert how["head"] == [f"{VENV}/bin/python", "-m", "pip", "install"]
    assert how["newest"] == [f"{VENV}/bin/python", "-m", "pip", "index", "versions", "torch_xla"]


@pytest.mark.parametrize(
    ("framework", "version", "torch", "newest", "expected"),
    [
        ("jax", "0.6.2", "", "", ["jax[tpu]==0.6.2", "tpu-info"]),
        ("jax", "latest", "", "jax==0.7.1\n", ["jax[tpu]==0.7.1", "tpu-info"]),
        (
            "jax",
            "latest",
            "",
            "JAX (0.4.38)\nAvailable versions: ...",
            ["jax[tpu]==0.4.38", "tpu-info"],
        ),
        ("torch_xla", "2.9.0", "", "", ["torch~=2.9.0", "torch_xla[tpu]==2.9.0", "tpu-info"]),
        (
            "torch_xla",
            "latest",
            "2.8.1",
            "torch-xla==2.8.0",
            ["torch==2.8.1", "torch_xla[tpu]==2.8.0", "tpu-info"],
        ),
        ("none", "latest", "", "", ["tpu-info"]),
    ],
)
def test_specifiers(framework, version, torch, newest, expected) -> None:
    found = specs(installer("uv", VENV, framework, UV), framework, version, torch, newest=newest)
    assert found["specs"] == expected


def test_the_index_naming_no_release_leaves_the_pin_empty() -> None:
    assert specs(installer("uv", VENV, "jax", UV), "jax", "latest", newest="")["pin"] == ""


def test_command_lines_with_a_requirements_file_and_extras() -> None:
    how = installer("pip", VENV, "jax", UV, index_url="https://mirror/simple")
    found = specs(
        how, "jax", "0.6.2", tpu_info="false", extra=["optax"], requirements_file="r.txt", venv=VENV
    )
    files = ["-r", f"{VENV}/cloudtpu-requirements.txt"]
    assert found["tools"] == []
    assert found["reqs"] == ["jax[tpu]==0.6.2", "optax", *files]
    head = [f"{VENV}/bin/python", "-m", "pip", "install"]
    assert found["install"] == [*head, "--index-url", "https://mirror/simple", *found["reqs"]]
    assert found["dry_run"][:8] == [*head, "--dry-run", "--quiet", "--report", "-"]
    assert found["dry_run"][8:] == found["install"][4:]
    uv = specs(installer("uv", VENV, "jax", UV), "jax", "0.6.2", venv=VENV)
    assert uv["dry_run"] == [
        UV,
        "pip",
        "install",
        "--dry-run",
        "--python",
        f"{VENV}/bin/python",
        *uv["specs"],
    ]


def test_the_dry_run_read() -> None:
    uv = {"stdout": "", "stderr": "Would install 2 packages\n + jax==0.6.2\n - jax==0.6.1"}
    uv["stderr_lines"], uv["stdout_lines"] = uv["stderr"].splitlines(), []
    assert plan(uv, "uv") == {"todo": True, "changes": "+ jax==0.6.2, - jax==0.6.1"}
    assert (
        plan(
            {"stdout": "", "stderr": "Audited 3 packages", "stdout_lines": [], "stderr_lines": []},
            "uv",
        )["todo"]
        is False
    )
    report = {"install": [{"metadata": {"name": "jax", "version": "0.6.2"}}]}
    assert plan({"stdout": json.dumps(report)}, "pip") == {"todo": True, "changes": "jax==0.6.2"}
    assert plan({"stdout": json.dumps({"install": []})}, "pip")["todo"] is False
    assert plan({"skipped": True}, "uv") == {"todo": False, "changes": ""}
    missing = plan({"skipped": True}, "uv", missing=True, dist="jax")
    assert missing["todo"] and missing["changes"].startswith("jax is not in the venv yet")


def test_the_filters_are_registered_and_say_their_name_on_errors() -> None:
    from ansible.errors import AnsibleFilterError

    specs_filter = Specs().filters()["framework_specs"]
    assert Installer().filters()["framework_installer"]("uv", VENV, "jax", UV)["name"] == "uv"
    assert Plan().filters()["framework_plan"]({"skipped": True}, "uv")["todo"] is False
    with pytest.raises(AnsibleFilterError, match="framework_specs"):
        specs_filter(installer("uv", VENV, "jax", UV), "tensorflow", "1.0")
