"""playbooks/ssh_config.yml: a managed block per inventory in the user's SSH config, with the
user, key and known_hosts file Ansible connects with, and refreshes of the file it last wrote.

The play runs for real on the control machine against a static inventory, with the config
path (or HOME) pointed at a temporary directory; `ssh -G` then shows what ssh itself makes of
the result, without connecting anywhere.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import error_text, playbook_env, run_playbook

PLAYBOOK = "playbooks/ssh_config.yml"
BEFORE = "# my own settings\nHost github.com\n    User git\n    IdentityFile ~/.ssh/github\n"
AFTER = "Host build-box\n    HostName 192.0.2.50\n"

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")


def write_inventory(path: Path, addresses: dict[str, str], **group_vars: object) -> Path:
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
    env = playbook_env(**({"HOME": str(home)} if home else {}), **env_extra)
    # The record of written files goes next to the inventory, not into the real home.
    record = ("-e", f"tpu_ssh_config_record={inventory.parent / 'ssh_config_record.json'}")
    return run_playbook(PLAYBOOK, inventory, *(() if home else record), *extra, env=env)


def ssh_g(config: Path, host: str) -> dict[str, str]:
    """ssh's own reading of the config for one host (`ssh -G`), as {option: value}."""
    out = subprocess.run(
        ["ssh", "-G", "-F", str(config), host],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def split_block(text: str) -> tuple[str, str, str]:
    """(before, block, after) around the one managed block."""
    begin = text.index("# BEGIN cloudtpu.pod ssh_config:")
    end = text.index("\n", text.index("# END cloudtpu.pod ssh_config:")) + 1
    assert text.count("# BEGIN cloudtpu.pod ssh_config:") == 1, text
    return text[:begin], text[begin:end], text[end:]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    ssh_dir = tmp_path / "ssh"
    ssh_dir.mkdir(mode=0o700)
    path = ssh_dir / "config"
    path.write_text(BEFORE)
    path.chmod(0o644)
    return path


def test_block_is_updated_in_place_when_ips_change(tmp_path: Path, config: Path):
    inventory = tmp_path / "inventory.json"
    path_arg = ("-e", f"tpu_ssh_config_path={config}")

    write_inventory(inventory, {"pod-w0": "203.0.113.10", "pod-w1": "203.0.113.11"})
    first = run(inventory, *path_arg)
    assert first.returncode == 0, first.stdout + first.stderr
    # The user adds something after the block between the runs.
    config.write_text(config.read_text() + AFTER)
    text_1 = config.read_text()
    before_1, block_1, after_1 = split_block(text_1)

    write_inventory(inventory, {"pod-w0": "198.51.100.20", "pod-w1": "198.51.100.21"})
    second = run(inventory, *path_arg)
    assert second.returncode == 0, second.stdout + second.stderr
    text_2 = config.read_text()
    before_2, block_2, after_2 = split_block(text_2)

    evidence = f"--- after run 1:\n{text_1}\n--- after run 2:\n{text_2}"
    assert "HostName 203.0.113.10" in block_1, evidence
    assert "HostName 198.51.100.20" in block_2, evidence
    assert "HostName 198.51.100.21" in block_2, evidence
    assert "203.0.113." not in text_2, evidence
    # Everything outside the block is untouched, byte for byte, and the block kept its place.
    assert before_2 == before_1, evidence
    assert after_2 == after_1, evidence
    assert BEFORE in after_2 and after_2.endswith(AFTER), evidence
    assert stat.S_IMODE(config.stat().st_mode) == 0o600, oct(config.stat().st_mode)


def test_second_run_with_the_same_inventory_changes_nothing(tmp_path: Path, config: Path):
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    path_arg = ("-e", f"tpu_ssh_config_path={config}")
    assert run(inventory, *path_arg).returncode == 0
    again = run(inventory, *path_arg)
    recap = [line for line in again.stdout.splitlines() if line.startswith("localhost")]
    assert again.returncode == 0, again.stdout + again.stderr
    assert recap and "changed=0" in recap[0], again.stdout


def test_ssh_reads_the_entries_as_meant(tmp_path: Path, config: Path):
    inventory = write_inventory(
        tmp_path / "inventory.json", {"pod-w0": "203.0.113.10", "pod-w1": "203.0.113.11"}
    )
    result = run(
        inventory,
        "-e",
        f"tpu_ssh_config_path={config}",
        "-e",
        "tpu_ssh_config_proxy_jump=me@bastion.example.com:2222",
        "-e",
        "tpu_ssh_config_identity_file=~/.ssh/tpu_key",
        "-e",
        "tpu_ssh_config_port=2200",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    seen = ssh_g(config, "pod-w1")
    evidence = f"{config.read_text()}\nssh -G pod-w1: {seen}"
    assert seen["hostname"] == "203.0.113.11", evidence
    assert seen["user"] == "alice", evidence
    assert seen["port"] == "2200", evidence
    assert seen["proxyjump"] == "me@bastion.example.com:2222", evidence
    assert seen["stricthostkeychecking"] == "accept-new", evidence
    assert seen["identityfile"].endswith("/.ssh/tpu_key"), evidence
    # The user's own entry still reads the same.
    assert ssh_g(config, "github.com")["user"] == "git", evidence


def test_a_host_star_section_of_the_user_does_not_override_the_entries(tmp_path: Path):
    ssh_dir = tmp_path / "ssh"
    ssh_dir.mkdir(mode=0o700)
    config = ssh_dir / "config"
    config.write_text("Host *\n    User someone-else\n    Port 2022\n")
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    assert run(inventory, "-e", f"tpu_ssh_config_path={config}").returncode == 0
    seen = ssh_g(config, "pod-w0")
    other = ssh_g(config, "elsewhere.example.com")
    evidence = f"{config.read_text()}\npod-w0: {seen}\nelsewhere: {other}"
    assert (seen["user"], seen["port"]) == ("alice", "22"), evidence
    assert (other["user"], other["port"]) == ("someone-else", "2022"), evidence


def test_default_path_is_created_private_under_home(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    inventory = write_inventory(tmp_path / "inventory.json", {"pod-w0": "203.0.113.10"})
    result = run(inventory, home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    ssh_dir, config = home / ".ssh", home / ".ssh" / "config"
    assert stat.S_IMODE(ssh_dir.stat().st_mode) == 0o700, oct(ssh_dir.stat().st_mode)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600, oct(config.stat().st_mode)
    assert f"# BEGIN cloudtpu.pod ssh_config: {inventory}" in config.read_text()


BAD = [
    # id, extra vars, inventory addresses, the variable or host the error names, value shown
    (
        "relative-path",
        {"tpu_ssh_config_path": "ssh/config"},
        None,
        "tpu_ssh_config_path",
        "'ssh/config'",
    ),
    ("port-range", {"tpu_ssh_config_port": 70000}, None, "tpu_ssh_config_port", "70000"),
    ("port-text", {"tpu_ssh_config_port": "ssh"}, None, "tpu_ssh_config_port", "'ssh'"),
    ("proxy-space", {"tpu_ssh_config_proxy_jump": "a b"}, None, "tpu_ssh_config_proxy_jump", "a b"),
    (
        "identity-quote",
        {"tpu_ssh_config_identity_file": '~/my "key"'},
        None,
        "tpu_ssh_config_identity_file",
        "my",
    ),
    ("user-name", {"tpu_ssh_config_user": "Bad User"}, None, "tpu_ssh_config_user", "Bad User"),
    ("no-group", {"tpu_ssh_config_group": "nope"}, None, "tpu_ssh_config_group", "nope"),
    ("pattern-host", {}, {"pod-w*": "203.0.113.10"}, "pod-w*", "pattern"),
    ("address-newline", {}, {"pod-w0": "203.0.113.10\n  ProxyCommand x"}, "ansible_host", "Proxy"),
    # a final line break too: the checks match the whole value (cloudtpu.pod.fullmatch)
    ("user-newline", {"tpu_ssh_config_user": "alice\n"}, None, "tpu_ssh_config_user", "alice"),
    ("address-final-newline", {}, {"pod-w0": "203.0.113.10\n"}, "ansible_host", "203.0.113.10"),
    # port forwards to worker 0
    (
        "forward-unknown-service",
        {"tpu_ssh_config_forwards": ["notebook"]},
        None,
        "tpu_ssh_config_forwards",
        "known services: jupyter, tensorboard, profiler",
    ),
    (
        "forward-port-range",
        {"tpu_ssh_config_forwards": [{"local": 8080, "remote": 70000}]},
        None,
        "tpu_ssh_config_forwards",
        "70000",
    ),
    (
        "forward-twice",
        {"tpu_ssh_config_forwards": ["jupyter", {"local": 8888, "remote": 9999}]},
        None,
        "tpu_ssh_config_forwards",
        "8888",
    ),
    (
        "forward-host-space",
        {"tpu_ssh_config_forwards": [{"local": 1, "remote": 2, "host": "a b"}]},
        None,
        "tpu_ssh_config_forwards",
        "a b",
    ),
    ("forward-not-a-list", {"tpu_ssh_config_forwards": "jupyter"}, None, "forwards", "not a list"),
]


@pytest.mark.parametrize(
    ("extra", "addresses", "named", "value"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_is_refused_before_writing(tmp_path, config, extra, addresses, named, value):
    inventory = write_inventory(tmp_path / "inventory.json", addresses or {"pod-w0": "10.0.0.2"})
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps({"tpu_ssh_config_path": str(config), **extra}))
    result = run(inventory, "-e", f"@{vars_file}")
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, out
    assert named in error, f"the error does not name {named}:\n{error or out}"
    assert value in error, f"the error does not show {value!r}:\n{error or out}"
    assert config.read_text() == BEFORE, config.read_text()


def test_entries_carry_the_key_and_known_hosts_file_ansible_uses(tmp_path: Path, config: Path):
    inventory = write_inventory(
        tmp_path / "inventory.json",
        {"pod-w0": "203.0.113.10"},
        ansible_ssh_private_key_file="/keys/pod key",
    )
    known = tmp_path / "known hosts"
    common = f"-o ControlMaster=auto -o 'UserKnownHostsFile={known}'"
    result = run(inventory, "-e", f"tpu_ssh_config_path={config}", ANSIBLE_SSH_COMMON_ARGS=common)
    out = result.stdout + result.stderr
    # A key path with a space cannot be one IdentityFile word: refused, nothing written.
    assert result.returncode != 0 and "ansible_ssh_private_key_file" in error_text(out), out
    assert config.read_text() == BEFORE

    write_inventory(
        inventory,
        {"pod-w0": "203.0.113.10"},
        ansible_ssh_private_key_file="/keys/pod_key",
        tpu_login_user="tpu",
    )
    result = run(inventory, "-e", f"tpu_ssh_config_path={config}", ANSIBLE_SSH_COMMON_ARGS=common)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = ssh_g(config, "pod-w0")
    evidence = f"{config.read_text()}\nssh -G pod-w0: {seen}"
    assert seen["user"] == "tpu", evidence  # the login user (tpu_login_user) over ansible_user
    assert seen["identityfile"] == "/keys/pod_key", evidence
    # One file whose name has a space: written quoted, read by ssh as one path.
    assert seen["userknownhostsfile"] == str(known), evidence
    # Without a key or known_hosts file in Ansible's settings, ssh keeps its own defaults.
    write_inventory(inventory, {"pod-w0": "203.0.113.10"})
    assert run(inventory, "-e", f"tpu_ssh_config_path={config}").returncode == 0
    block = split_block(config.read_text())[1]
    assert "IdentityFile" not in block and "UserKnownHostsFile" not in block, block


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
    out = subprocess.run(
        ["ssh", "-G", "-F", str(config), host],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.splitlines()
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
