"""tests/forked_cli.py: a forked run answers as a new ansible-playbook process does.

Each case runs the same command both ways (CLOUDTPU_FORKED_CLI=0 starts a new process) and
compares what a test reads: the exit code and the lines of the output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests import forked_cli
from tests.role_runner import ansible_env

LOCAL = {
    "hosts": "localhost",
    "connection": "local",
    "gather_facts": False,
    "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
}
PLAY = [
    {
        **LOCAL,
        "tasks": [
            {"name": "Say", "ansible.builtin.debug": {"msg": "{{ lookup('env', 'WORD') }}"}},
            {"name": "Tags", "ansible.builtin.debug": {"msg": "{{ ansible_run_tags }}"}},
            {"name": "Fail", "ansible.builtin.fail": {"msg": "asked to"}, "when": "fail | bool"},
        ],
    }
]


@pytest.fixture
def play(tmp_path: Path) -> Path:
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(PLAY))
    return path


def both(monkeypatch: pytest.MonkeyPatch, cmd: list[str], **kwargs):
    monkeypatch.setenv("CLOUDTPU_FORKED_CLI", "0")
    fresh = forked_cli.run(cmd, **kwargs)
    monkeypatch.setenv("CLOUDTPU_FORKED_CLI", "1")
    forked = forked_cli.run(cmd, **kwargs)
    return fresh, forked


def results(output: str) -> list[tuple[str, dict]]:
    """Each task's name and result (the JSON callback's), without the timings."""
    report = json.loads(output[output.index("{") :])
    found = []
    for play in report["plays"]:
        for task in play["tasks"]:
            for result in task["hosts"].values():
                kept = {k: v for k, v in result.items() if k not in ("start", "end", "delta")}
                found.append((task["task"]["name"], kept))
    return found


@pytest.mark.parametrize("fail", ["false", "true"])
def test_a_forked_run_answers_as_a_new_process(
    monkeypatch: pytest.MonkeyPatch, play: Path, tmp_path: Path, fail: str
) -> None:
    cmd = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(play), "-e", f"fail={fail}"]
    cmd += ["--tags", "all,extra"]
    env = ansible_env(WORD="hello", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    env.update(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json"
    )
    fresh, forked = both(monkeypatch, cmd, cwd=tmp_path, env=env, timeout=120)
    forked_cli.close_all()
    assert fresh.returncode == forked.returncode == (2 if fail == "true" else 0), forked.stderr
    said = results(forked.stdout)
    assert [name for name, _ in said] == [name for name, _ in results(fresh.stdout)]
    assert said[0][1]["msg"] == "hello"
    assert sorted(said[1][1]["msg"]) == ["all", "extra"]
    assert len(said) == 3 if fail == "true" else said[2][1].get("skipped")
    # the server's temporary folder went with it; nothing of either run is left
    assert not list((tmp_path / "tmp").glob("*"))


def test_a_server_that_loaded_what_its_runs_load_answers_as_a_new_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """From its second run on, a server has loaded the plugins and its runs' collection modules
    (a filter of this collection, here): its later runs answer as new processes do."""
    play = tmp_path / "names.yml"
    say = "{{ names | cloudtpu.pod.name_list }}"
    play.write_text(json.dumps([{**LOCAL, "tasks": [{"ansible.builtin.debug": {"msg": say}}]}]))
    env = ansible_env(ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    env.update(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json"
    )
    runs = []
    for names in ("a, b", "c", "d,e,,f"):
        cmd = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(play), "-e", f"names='{names}'"]
        runs.append(both(monkeypatch, cmd, cwd=tmp_path, env=env, timeout=120))
    forked_cli.close_all()
    for (fresh, forked), want in zip(runs, (["a", "b"], ["c"], ["d", "e", "f"]), strict=True):
        assert fresh.returncode == forked.returncode == 0, forked.stderr
        assert results(forked.stdout) == results(fresh.stdout)
        assert results(forked.stdout)[0][1]["msg"] == want
        assert forked.stderr == fresh.stderr


def test_a_server_loads_the_plugins_and_what_its_runs_loaded(tmp_path: Path) -> None:
    """_Warm, in a process of its own as in a server: nothing before the second run; then the
    plugins every run loads, with their documented options, the collection modules a run
    imported, and a file two runs parsed (not one only one run parsed, nor one whose parse
    warns). A kept file is given to
    a run's first loader only, and only while its bytes are unchanged."""
    module = "ansible_collections.cloudtpu.pod.plugins.filter.name_list"
    nothing = "ansible_collections.cloudtpu.pod.plugins.filter.nothing"
    both, once, dup = tmp_path / "both.yml", tmp_path / "once.yml", tmp_path / "dup.yml"
    both.write_text("a: 1\n")
    once.write_text("b: 2\n")
    dup.write_text("c: 1\nc: 2\n")  # its parse warns of the duplicate key: a run says so itself
    for run, files in (("run1", [both, once, dup]), ("run2", [both, dup])):
        report = {
            "modules": ["json", module, nothing],
            "files": [[str(f), False, True] for f in files],
        }
        (tmp_path / f"{run}.report").write_text(json.dumps(report))
    script = f"""
import json, sys
from pathlib import Path
from tests import forked_cli_server as server
from ansible import constants as C
from ansible.parsing.dataloader import DataLoader
def state():
    return [{module!r} in sys.modules, C.config.has_configuration_definition("connection", "ssh"),
            C.config.has_configuration_definition("callback", "default"),
            sorted(key[0].rsplit("/", 1)[1] for key in server._PARSED)]
warm = server._Warm()
warm.learn({str(tmp_path / "run1.report")!r})
warm.before_run()
first = state()
warm.learn({str(tmp_path / "run2.report")!r})
warm.learn({str(tmp_path / "missing")!r})
warm.before_run()
second = state()
[kept] = server._PARSED.values()
server._SERVING[0] = False  # as in a run
def load(name):
    return DataLoader().load_from_file(name, unsafe=True, trusted_as_template=True)
taken, again, plain = load({str(both)!r}), load({str(both)!r}), DataLoader().load_from_file(
    {str(both)!r}, unsafe=True)
Path({str(both)!r}).write_text("a: 3\\n")
server._TAKEN.clear()  # as in a new run: nothing taken yet
print(json.dumps({{"first": first, "second": second, "modules": sorted(warm.modules),
    "taken": [taken is kept, again is kept, again == kept, plain is kept],
    "changed": load({str(both)!r}),
    "loaded": sorted([key[0].rsplit("/", 1)[1], key[2]] for key in server._LOADED)}}))
"""
    env = ansible_env()
    env["PYTHONPATH"] = str(Path(forked_cli.__file__).parents[1])
    done = subprocess.run(
        [forked_cli._interpreter(), "-c", script], cwd=tmp_path, env=env,
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "first": [False, False, False, []],
        "second": [True, True, True, ["both.yml"]],
        "modules": [module, nothing],  # only collection modules; one that fails is skipped
        # the first load takes it; another, or one not trusted as a template, parses anew
        "taken": [True, False, True, False],
        "changed": {"a": 3},
        "loaded": [["both.yml", False], ["both.yml", True]],  # (the file, trusted) for its report
    }


def test_each_environment_has_a_server_of_its_own(play: Path, tmp_path: Path) -> None:
    cmd = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(play), "-e", "fail=false"]
    said = []
    for word in ("one", "two", "one"):
        env = ansible_env(WORD=word, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
        said.append(forked_cli.run(cmd, cwd=tmp_path, env=env, timeout=120).stdout)
    assert len(forked_cli._SERVERS) == 2
    forked_cli.close_all()
    assert ['"msg": "one"' in out for out in said] == [True, False, True]
    assert '"msg": "two"' in said[1]


def test_only_the_newest_servers_are_kept(play: Path, tmp_path: Path) -> None:
    cmd = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(play), "-e", "fail=false"]
    for number in range(forked_cli.KEEP + 2):
        env = ansible_env(WORD=str(number), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
        assert forked_cli.run(cmd, cwd=tmp_path, env=env, timeout=120).returncode == 0
    kept = [dict(key[1])["WORD"] for key in forked_cli._SERVERS]
    closing = list(forked_cli._CLOSING)
    forked_cli.close_all()
    assert kept == [str(n) for n in range(2, forked_cli.KEEP + 2)]
    assert len(closing) == 2 and not any(thread.is_alive() for thread in closing)


def test_runs_side_by_side_and_a_timeout_kills_the_run(tmp_path: Path) -> None:
    slow = tmp_path / "slow.yml"
    slow.write_text(
        json.dumps(
            [{**LOCAL, "tasks": [{"ansible.builtin.command": "sleep {{ seconds }}"}]}]
        )
    )  # fmt: skip
    env = ansible_env(ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    base = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(slow), "-e"]
    answers: dict[str, object] = {}

    def go(name: str, seconds: int, timeout: float) -> None:
        try:
            answers[name] = forked_cli.run(
                [*base, f"seconds={seconds}"], cwd=tmp_path, env=env, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired as exc:
            answers[name] = exc

    threads = [
        threading.Thread(target=go, args=("quick", 1, 120)),
        threading.Thread(target=go, args=("stuck", 37, 6)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=200)
    stuck = answers["stuck"]
    assert answers["quick"] == 0
    assert isinstance(stuck, subprocess.TimeoutExpired)
    assert "PLAY [localhost]" in str(stuck.output)  # what it printed before it was killed
    # As subprocess.run kills its ansible-playbook, the run's own process was killed (its task's
    # worker has a session of its own, as Ansible's workers do, and ends with its command): the
    # server, which stops once its runs have ended, stops well before the command would end.
    started = time.monotonic()
    forked_cli.close_all()
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("forked", ["1", "0"])
def test_on_start_gives_the_run_that_a_ctrl_c_stops(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, forked: str
) -> None:
    slow = tmp_path / "slow.yml"
    marker = tmp_path / "started"
    task = {"ansible.builtin.shell": f"touch {marker} && sleep 60"}
    slow.write_text(json.dumps([{**LOCAL, "tasks": [task]}]))
    monkeypatch.setenv("CLOUDTPU_FORKED_CLI", forked)
    env = ansible_env(ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    cmd = [str(forked_cli.PLAYBOOK), "-i", "localhost,", str(slow)]
    sent: list[float] = []

    def ctrl_c(pid: int) -> None:  # once the task has started, as a terminal sends it
        def later() -> None:
            deadline = time.monotonic() + 100
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            sent.append(time.monotonic())
            os.killpg(pid, signal.SIGINT)

        threading.Thread(target=later, daemon=True).start()

    done = forked_cli.run(cmd, cwd=tmp_path, env=env, timeout=150, on_start=ctrl_c)
    assert marker.exists(), done.stdout[-2000:]
    assert done.returncode != 0, done.stdout[-2000:]
    assert time.monotonic() - sent[0] < 30, "the run did not stop at Ctrl-C"
    forked_cli.close_all()


def test_other_commands_run_as_usual(tmp_path: Path) -> None:
    done = forked_cli.run(["echo", "plain"], cwd=tmp_path, timeout=30)
    assert (done.returncode, done.stdout) == (0, "plain\n")
    assert forked_cli._SERVERS == {}
