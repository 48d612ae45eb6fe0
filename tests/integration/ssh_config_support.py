"""The pieces the tests of playbooks/ssh_config.yml share (test_ssh_config.py,
test_ssh_config_refresh.py): a static inventory, a run of the play against it, the user's own
SSH config around the managed block, and ssh's own reading of the result (`ssh -G`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.integration.playbook_helpers import playbook_env, run_playbook

PLAYBOOK = "playbooks/ssh_config.yml"
BEFORE = "# my own settings\nHost github.com\n    User git\n    IdentityFile ~/.ssh/github\n"
AFTER = "Host build-box\n    HostName 192.0.2.50\n"


def user_config(folder: Path) -> Path:
    """A user's SSH config in ``folder``/ssh (mode 0700) with settings of their own (BEFORE),
    readable by others (0644) as many are."""
    ssh_dir = folder / "ssh"
    ssh_dir.mkdir(mode=0o700)
    path = ssh_dir / "config"
    path.write_text(BEFORE)
    path.chmod(0o644)
    return path


def write_inventory(path: Path, addresses: dict[str, str], **group_vars: object) -> Path:
    """A static inventory of one pod: {host name: address} in worker order, as user alice."""
    hosts = {
        name: {"ansible_host": ip, "tpu_node": "pod", "tpu_worker_id": worker}
        for worker, (name, ip) in enumerate(addresses.items())
    }
    inventory = {
        "all": {
            "children": {"tpu": {"hosts": hosts, "vars": {"ansible_user": "alice", **group_vars}}}
        }
    }
    path.write_text(json.dumps(inventory))
    return path


def run(inventory: Path, *extra: str, home: Path | None = None, **env_extra: str):
    """The play against ``inventory``; with ``home``, as a user whose home that is."""
    env = playbook_env(**({"HOME": str(home)} if home else {}), **env_extra)
    # The record of written files goes next to the inventory, not into the real home.
    record = ("-e", f"tpu_ssh_config_record={inventory.parent / 'ssh_config_record.json'}")
    return run_playbook(PLAYBOOK, inventory, *(() if home else record), *extra, env=env)


def ssh_g_lines(config: Path, host: str) -> list[str]:
    """ssh's own reading of the config for one host (`ssh -G`), one option per line."""
    return subprocess.run(
        ["ssh", "-G", "-F", str(config), host],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.splitlines()


def ssh_g(config: Path, host: str) -> dict[str, str]:
    """ssh's own reading of the config for one host (`ssh -G`), as {option: value}."""
    return dict(line.split(" ", 1) for line in ssh_g_lines(config, host) if " " in line)


def split_block(text: str) -> tuple[str, str, str]:
    """(before, block, after) around the one managed block."""
    begin = text.index("# BEGIN cloudtpu.pod ssh_config:")
    end = text.index("\n", text.index("# END cloudtpu.pod ssh_config:")) + 1
    assert text.count("# BEGIN cloudtpu.pod ssh_config:") == 1, text
    return text[:begin], text[begin:end], text[end:]
