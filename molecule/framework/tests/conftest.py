"""What the framework scenario's tests read from an ansible-playbook run's output."""

from __future__ import annotations

import re
import subprocess

STATUS = re.compile(r"^(ok|changed|skipping|fatal):")


def tasks(result: subprocess.CompletedProcess[str], role: str) -> list[tuple[str, str]]:
    """(task name, first status: ok, changed, skipping, fatal) of each task of `role`, in order."""
    found: list[tuple[str, str]] = []
    lines = result.stdout.splitlines()
    for index, line in enumerate(lines):
        header = re.match(rf"TASK \[cloudtpu\.pod\.{role} : (.*)\] \*", line)
        if header:
            after = [STATUS.match(later) for later in lines[index + 1 : index + 6]]
            status = next((match.group(1) for match in after if match), "")
            found.append((header.group(1), status))
    return found


def changed(result: subprocess.CompletedProcess[str]) -> int:
    """changed= of the play recap."""
    match = re.search(r"changed=(\d+)", result.stdout.split("PLAY RECAP")[-1])
    assert match, result.stdout[-2000:]
    return int(match.group(1))
