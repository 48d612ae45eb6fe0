"""playbooks/ssh_config.yml refreshes (tpu_ssh_config_refresh, as recover.yml runs it): every
file written is rewritten with its own recorded options, records of the earlier shape included;
and the port forwards to worker 0 of each pod (tpu_ssh_config_forwards), kept across refreshes.

The play runs for real on the control machine against a static inventory, with the config
path pointed at a temporary directory; `ssh -G` then shows what ssh itself makes of the result,
without connecting anywhere (tests/integration/ssh_config_support.py).
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import error_text
from tests.integration.ssh_config_support import (
    BEFORE,
    run,
    split_block,
    ssh_g,
    ssh_g_lines,
    user_config,
    write_inventory,
)

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return user_config(tmp_path)


def test_refresh_rewrites_the_file_last_written(tmp_path: Path, config: Path):
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    # Nothing written yet for this inventory: a refresh changes nothing and says so.
    nothing = run(inventory, "-e", "tpu_ssh_config_refresh=true")
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    assert "nothing to refresh" in nothing.stdout, nothing.stdout
    assert config.read_text() == BEFORE

    first = run(
        inventory, "-e", f"tpu_ssh_config_path={config}", "-e", "tpu_ssh_config_proxy_jump=jump"
    )
    assert first.returncode == 0, first.stdout + first.stderr
    write_inventory(inventory, {"pod-w0": "198.51.100.20"})
    refreshed = run(inventory, "-e", "tpu_ssh_config_refresh=yes")
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    seen = ssh_g(config, "pod-w0")
    assert seen["hostname"] == "198.51.100.20", config.read_text()
    assert seen["proxyjump"] == "jump", config.read_text()  # the recorded option is kept


def test_refresh_rewrites_every_file_written_with_its_own_options(tmp_path: Path, config: Path):
    # As after `make demo` (.demo/ssh_config) and then the README's run (~/.ssh/config).
    demo = tmp_path / "demo" / "ssh_config"
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    first = run(
        inventory, "-e", f"tpu_ssh_config_path={demo}", "-e", "tpu_ssh_config_proxy_jump=jump"
    )
    assert first.returncode == 0, first.stdout + first.stderr
    second = run(inventory, "-e", f"tpu_ssh_config_path={config}", "-e", "tpu_ssh_config_port=2200")
    assert second.returncode == 0, second.stdout + second.stderr

    write_inventory(inventory, {"pod-w0": "198.51.100.20"})
    refreshed = run(inventory, "-e", "tpu_ssh_config_refresh=true")
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    demo_seen, config_seen = ssh_g(demo, "pod-w0"), ssh_g(config, "pod-w0")
    evidence = f"--- demo:\n{demo.read_text()}\n--- config:\n{config.read_text()}"
    assert demo_seen["hostname"] == config_seen["hostname"] == "198.51.100.20", evidence
    # Each file keeps the options it was written with.
    assert (demo_seen["proxyjump"], demo_seen["port"]) == ("jump", "22"), evidence
    assert "proxyjump" not in config_seen and config_seen["port"] == "2200", evidence
    assert stat.S_IMODE(demo.stat().st_mode) == 0o600, oct(demo.stat().st_mode)
    assert stat.S_IMODE(demo.parent.stat().st_mode) == 0o700, oct(demo.parent.stat().st_mode)
    assert BEFORE in config.read_text(), evidence

    # With tpu_ssh_config_refresh_path, only that file.
    write_inventory(inventory, {"pod-w0": "192.0.2.30"})
    one = run(
        inventory, "-e", "tpu_ssh_config_refresh=true", "-e", f"tpu_ssh_config_refresh_path={demo}"
    )
    assert one.returncode == 0, one.stdout + one.stderr
    assert ssh_g(demo, "pod-w0")["hostname"] == "192.0.2.30", demo.read_text()
    assert ssh_g(config, "pod-w0")["hostname"] == "198.51.100.20", config.read_text()


def test_refresh_reads_a_record_of_the_earlier_shape(tmp_path: Path, config: Path):
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "198.51.100.20"})
    record = tmp_path / "ssh_config_record.json"
    # One file per block name, as the record was before it kept every file.
    options = {
        "path": str(config),
        "user": "",
        "identity_file": "",
        "proxy_jump": "jump",
        "port": "",
    }
    record.write_text(json.dumps({str(inventory): options}))
    refreshed = run(inventory, "-e", "tpu_ssh_config_refresh=true")
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    seen = ssh_g(config, "pod-w0")
    assert (seen["hostname"], seen["proxyjump"]) == ("198.51.100.20", "jump"), config.read_text()
    # Rewritten in the current shape (a record from before the forwards has none).
    current = {**options, "forwards": []}
    assert json.loads(record.read_text())[str(inventory)] == {"files": {str(config): current}}


def write_pods(path: Path, pods: dict[str, list[str]]) -> Path:
    """A static inventory of several pods: {node: [address of worker 0, of worker 1, ...]}."""
    hosts = {
        f"{node}-w{worker}": {"ansible_host": ip, "tpu_node": node, "tpu_worker_id": worker}
        for node, ips in pods.items()
        for worker, ip in enumerate(ips)
    }
    inventory = {"all": {"children": {"tpu": {"hosts": hosts, "vars": {"ansible_user": "alice"}}}}}
    path.write_text(json.dumps(inventory))
    return path


def forwards_of(config: Path, host: str) -> tuple[list[str], str]:
    """(LocalForward values, ExitOnForwardFailure) as ssh reads them for host."""
    out = ssh_g_lines(config, host)
    forwards = [line.split(" ", 1)[1] for line in out if line.startswith("localforward ")]
    exit_on = next(line.split(" ", 1)[1] for line in out if line.startswith("exitonforwardfailure"))
    return forwards, exit_on


def test_forwards_go_to_worker_0_of_each_pod_and_survive_a_refresh(tmp_path: Path, config: Path):
    inventory = write_pods(
        tmp_path / "inventory.json",
        {"pod-a": ["203.0.113.10", "203.0.113.11"], "pod-b": ["203.0.113.20", "203.0.113.21"]},
    )
    forwards = ["jupyter", {"local": 16006, "remote": 6006}, {"local": 2222, "remote": 22,
                "host": "10.0.0.9"}]  # fmt: skip
    args = (
        "-e",
        f"tpu_ssh_config_path={config}",
        "-e",
        json.dumps({"tpu_ssh_config_forwards": forwards}),
    )
    first = run(inventory, *args)
    assert first.returncode == 0, first.stdout + first.stderr
    block = split_block(config.read_text())[1]
    wanted = [
        "[127.0.0.1]:8888 [localhost]:8888",
        "[127.0.0.1]:16006 [localhost]:6006",
        "[127.0.0.1]:2222 [10.0.0.9]:22",
    ]
    for worker0 in ("pod-a-w0", "pod-b-w0"):
        assert forwards_of(config, worker0) == (wanted, "yes"), block
    for other in ("pod-a-w1", "pod-b-w1", "github.com"):
        assert forwards_of(config, other) == ([], "no"), block
    # Written once per worker 0, bound to the loopback address only.
    assert block.count("    LocalForward 127.0.0.1:8888 localhost:8888\n") == 2, block
    assert block.count("LocalForward") == 6 and block.count("ExitOnForwardFailure yes") == 2, block
    assert (
        "`ssh -F " in first.stdout and "-N pod-a-w0` holds its port forwards open" in first.stdout
    )

    # The same run again changes nothing; --check --diff shows a change without making it.
    again = run(inventory, *args)
    recap = [line for line in again.stdout.splitlines() if line.startswith("localhost")]
    assert again.returncode == 0 and recap and "changed=0" in recap[0], again.stdout
    before = config.read_text()
    dry = run(inventory, "--check", "--diff", "-e", f"tpu_ssh_config_path={config}", "-e",
              '{"tpu_ssh_config_forwards": ["tensorboard"]}')  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "-    LocalForward 127.0.0.1:8888 localhost:8888" in dry.stdout, dry.stdout
    assert "+    LocalForward 127.0.0.1:6006 localhost:6006" in dry.stdout, dry.stdout
    assert config.read_text() == before

    # New addresses, then a refresh as recover.yml runs it: the recorded forwards are kept.
    write_pods(inventory, {"pod-a": ["198.51.100.10", "198.51.100.11"], "pod-b": ["198.51.100.20"]})
    refreshed = run(inventory, "-e", "tpu_ssh_config_refresh=true")
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    block = split_block(config.read_text())[1]
    assert ssh_g(config, "pod-a-w0")["hostname"] == "198.51.100.10", block
    assert forwards_of(config, "pod-a-w0") == (wanted, "yes"), block
    assert forwards_of(config, "pod-a-w1") == ([], "no"), block

    # A plain run without the variable writes none.
    plain = run(inventory, "-e", f"tpu_ssh_config_path={config}")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "Forward" not in split_block(config.read_text())[1]


def test_bad_forwards_are_refused_by_a_check_task(tmp_path: Path, config: Path):
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    value = json.dumps({"tpu_ssh_config_forwards": ["jupyter", "tensorbored"]})
    result = run(inventory, "-e", f"tpu_ssh_config_path={config}", "-e", value)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    failed = out[: out.index("fatal: [localhost]")]
    assert failed.rstrip().rsplit("TASK [", 1)[1].startswith("Check"), failed[-400:]
    error = error_text(out) or out
    assert 'tpu_ssh_config_forwards item 2 is "tensorbored"' in error, error
    assert "known services: jupyter, tensorboard, profiler" in error, error
    assert config.read_text() == BEFORE
