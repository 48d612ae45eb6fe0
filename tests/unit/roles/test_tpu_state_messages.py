"""cloudtpu.pod.tpu_state's messages name a command by what a reader needs: a script given as an
argument (python -c, as the framework and tcmalloc roles do) by its size, not its whole text."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_state

SCRIPT = "import json\nprint(json.dumps({}))\n"


def test_a_script_argument_is_shown_by_its_size() -> None:
    argv = ["/venv/bin/python", "-I", "-B", "-c", SCRIPT, "/venv/bin/activate"]
    assert (
        tpu_state.shown(argv) == "/venv/bin/python -I -B -c <script of 3 lines> /venv/bin/activate"
    )


def test_plain_arguments_are_shown_as_they_are() -> None:
    argv = ["getent", "passwd", "tpu", "--index=" + "x" * 150]
    assert tpu_state.shown(argv) == " ".join(argv)


def test_differences_and_unhealthy_use_it() -> None:
    command = {"argv": ["python3", "-c", SCRIPT], "user": ""}
    recorded = {"commands": [dict(command, rc=0, sha256="a")]}
    seen = {"commands": [dict(command, rc=1, sha256="b")]}
    assert tpu_state.differences(recorded, seen) == [
        "command python3 -c <script of 3 lines>: output or exit code differs"
    ]
    assert tpu_state.unhealthy(seen) == ["command python3 -c <script of 3 lines>: exit code 1"]
