"""tools/stages.py: stages side by side, needs honoured, logs printed whole, the stage table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import machine_load, stage_report, stages
from tools.stages import Stage


def shell(scripts: dict[str, str]):
    """A command per stage: the stage's shell script instead of a make target."""
    return lambda stage: ["sh", "-c", scripts[stage.target]]


def test_needs_run_first_and_a_failure_stops_what_needs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    order = tmp_path / "order"
    suite = (
        Stage("a", "a"),
        Stage("b", "b", ("a",)),
        Stage("bad", "bad"),
        Stage("after-bad", "after-bad", ("bad",)),
    )
    scripts = {
        "a": f"sleep 0.3; echo a >> {order}; echo out-a",
        "b": f"echo b >> {order}; echo out-b",
        "bad": "echo broken; exit 3",
        "after-bad": f"echo after-bad >> {order}",
    }
    code = stages.run(suite, jobs=2, log_dir=tmp_path / "logs", command=shell(scripts))
    out = capsys.readouterr().out
    assert code == 1
    assert order.read_text().split() == ["a", "b"], "b waits for a; after-bad never runs"
    assert "======== stage bad FAILED with exit code 3" in out
    assert "broken" in out and "out-a" in out and "out-b" in out
    assert re.search(r"^after-bad\s+-\s+-\s+-\s+not run: needs bad$", out, re.M), out
    assert re.search(r"^bad\s+\d+:\d\d\s+\d+:\d\d\s+\d+:\d\d\s+FAILED \(3\)$", out, re.M), out
    assert (tmp_path / "logs" / "summary.txt").read_text().strip() in out


def test_stages_run_side_by_side_up_to_jobs(tmp_path: Path) -> None:
    # Each stage waits for the other to start: with jobs=2 both finish, with jobs=1 the
    # first waits in vain (and gives up after its timeout, failing).
    flag = tmp_path / "flag"
    wait = "for i in $(seq 20); do [ -e {} ] && exit 0; sleep 0.1; done; exit 1"
    scripts = {
        "x": f"touch {flag}.x; " + wait.format(f"{flag}.y"),
        "y": f"touch {flag}.y; " + wait.format(f"{flag}.x"),
    }
    suite = (Stage("x", "x"), Stage("y", "y"))
    assert stages.run(suite, jobs=2, log_dir=tmp_path / "two", command=shell(scripts)) == 0
    for f in tmp_path.glob("flag.*"):
        f.unlink()
    assert stages.run(suite, jobs=1, log_dir=tmp_path / "one", command=shell(scripts)) == 1


def test_the_table_shows_the_cpu_time_of_each_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a child of the stage's shell spins for about 2.2 CPU seconds; the idle stage uses none
    spin = "python3 -c 'import time\nwhile time.process_time() < 2.2: pass'"
    suite = (Stage("busy", "busy"), Stage("idle", "idle"))
    scripts = {"busy": spin, "idle": "sleep 1"}
    assert stages.run(suite, jobs=2, log_dir=tmp_path, command=shell(scripts)) == 0
    out = capsys.readouterr().out
    busy = re.search(r"^busy\s+\d+:\d\d\s+\d+:\d\d\s+(\d+):(\d\d)\s+passed$", out, re.M)
    idle = re.search(r"^idle\s+\d+:\d\d\s+\d+:\d\d\s+(\d+):(\d\d)\s+passed$", out, re.M)
    assert busy and idle, out
    assert int(busy[2]) >= 2 and idle[0].endswith("0:00  passed"), out


def test_timeline_gives_the_busy_share_of_each_interval() -> None:
    samples = [(10.0, 20.0), (11.0, 22.0), (13.0, 24.0), (13.0, 24.0)]
    assert machine_load.timeline(samples) == "50 100"


def test_a_spare_slot_opens_beside_a_light_stage_only_while_the_cpus_are_idle(
    tmp_path: Path,
) -> None:
    # Three stages that each wait for the other two to start: they pass only side by side.
    wait = "for i in $(seq 60); do [ -e {} ] && [ -e {} ] && exit 0; sleep 0.1; done; exit 1"
    flag = tmp_path / "flag"
    scripts = {
        n: f"touch {flag}.{n}; " + wait.format(*(f"{flag}.{o}" for o in "xyz" if o != n))
        for n in "xyz"
    }
    beside_light = (Stage("x", "x", light=True), Stage("y", "y"), Stage("z", "z"))
    heavy = (Stage("x", "x"), Stage("y", "y"), Stage("z", "z", light=True))

    def go(suite: tuple[Stage, ...], idle: float, name: str) -> int:
        for f in tmp_path.glob("flag.*"):
            f.unlink()
        # the machine reads as `idle` idle; settle 0.2 s, so the spare slot's wait is short
        load = stages.Load(read=iter_readings(idle), settle=0.2)
        command = shell(scripts)
        return stages.run(suite, 2, tmp_path / name, command, spare=1, load=load)

    assert go(beside_light, 0.9, "idle") == 0, "z took the spare slot beside the light x"
    assert go(beside_light, 0.1, "busy") == 1, "no spare slot while the CPUs are busy"
    assert go(heavy, 0.9, "heavy") == 1, "no spare slot while only heavy stages run"


def test_a_spare_slot_opens_while_a_kept_slot_waits_on_a_light_stage(tmp_path: Path) -> None:
    # integration keeps the second slot while the (light) image builds; lint, which needs
    # nothing running, takes a spare one instead of waiting for the image.
    order = tmp_path / "order"
    scripts = {
        "image": f"for i in $(seq 50); do [ -e {order} ] && break; sleep 0.1; done; "
        f"echo image >> {order}",
        "integration": f"echo integration >> {order}",
        "lint": f"echo lint >> {order}",
    }
    suite = (
        Stage("image", "image", light=True),
        Stage("integration", "integration", ("image",)),
        Stage("lint", "lint"),
    )
    load = stages.Load(read=iter_readings(0.9), settle=0.2)
    assert stages.run(suite, 2, tmp_path / "logs", shell(scripts), spare=1, load=load) == 0
    assert order.read_text().split() == ["lint", "image", "integration"]


def test_the_spare_slot_goes_to_a_stage_that_computes_first() -> None:
    mol_a, mol_b = Stage("mol-a", "a", light=True), Stage("mol-b", "b", light=True)
    lint, unit = Stage("lint", "lint"), Stage("unit", "unit")
    assert stages.spare_choice([mol_b, lint, unit], [mol_a]) == lint
    assert stages.spare_choice([mol_b], [mol_a, lint]) == mol_b, "a light one when none computes"
    assert stages.spare_choice([lint], [unit]) is None, "nothing light runs: no spare"
    assert stages.spare_choice([], [mol_a]) is None


def iter_readings(idle: float):
    """cpu_times() readings of a machine that is `idle` idle: 10 CPU-seconds per reading."""
    state = {"all": 0.0}

    def read() -> tuple[float, float]:
        state["all"] += 10.0
        return (state["all"] * (1 - idle), state["all"])

    return read


def test_load_measures_the_idle_share_since_the_settle_time() -> None:
    load = stages.Load(read=iter_readings(0.75), settle=10.0)
    for now in (0.0, 3.0, 6.0, 9.0, 12.0):
        load.sample(now)
    assert load.idle(12.0) == pytest.approx(0.75)
    load.started(11.0)
    assert load.idle(12.0) == 0.0, "a stage started within the settle time"
    assert stages.Load(read=lambda: None, settle=1.0).idle(5.0) == 0.0, "unknown: no spare"


def test_a_stage_about_to_be_ready_keeps_its_slot_from_a_later_one(tmp_path: Path) -> None:
    # first: quick; long needs first; filler is ready at once but comes after long in priority.
    # With two slots, filler must not take long's slot while first runs.
    order = tmp_path / "order"
    scripts = {
        "first": f"sleep 0.5; echo first >> {order}",
        "long": f"echo long >> {order}",
        "filler": f"echo filler >> {order}",
        "other": f"sleep 4; echo other >> {order}",
    }
    suite = (
        Stage("first", "first"),
        Stage("other", "other"),
        Stage("long", "long", ("first",)),
        Stage("filler", "filler"),
    )
    assert stages.run(suite, 2, tmp_path / "logs", shell(scripts)) == 0
    assert order.read_text().split() == ["first", "long", "filler", "other"]


def test_choose_keeps_slots_for_stages_whose_needs_start_now_or_run() -> None:
    tools, integration = Stage("host-tools", "t"), Stage("integration", "i", ("host-tools",))
    journey, molecule = Stage("journey", "j", ("host-tools",)), Stage("molecule", "m")
    pending = [tools, integration, journey, molecule]
    names = {s.name for s in pending}
    # host-tools starts; integration and journey, which need only it, keep the other slot and
    # the next one: molecule (ready, later in priority) waits
    assert stages.choose(pending, names, set(), set(), 2) == [tools]
    assert stages.choose(pending[1:], names, set(), {"host-tools"}, 1) == []
    assert stages.choose(pending[1:], names, {"host-tools"}, set(), 2) == [integration, journey]
    # a need that failed (neither passed nor running) keeps no slot
    assert stages.choose(pending[1:], names, set(), set(), 1) == [molecule]


def test_slowest_reads_pytest_durations_of_every_log(tmp_path: Path) -> None:
    unit = tmp_path / "unit.log"
    unit.write_text(
        "=== slowest 3 durations ===\n"
        "2.50s call     tests/unit/test_a.py::test_one\n"
        "0.10s setup    tests/unit/test_a.py::test_two\n"
        "not a duration 9.99s\n"
    )
    integration = tmp_path / "integration.log"
    integration.write_text("12.00s call     tests/integration/test_b.py::test_slow[x y]\n")
    found = stage_report.slowest(
        [("unit", unit), ("integration", integration), ("gone", tmp_path / "x")]
    )
    assert found == [
        (12.0, "integration", "tests/integration/test_b.py::test_slow[x y] (call)"),
        (2.5, "unit", "tests/unit/test_a.py::test_one (call)"),
        (0.1, "unit", "tests/unit/test_a.py::test_two (setup)"),
    ]


def test_the_suite_names_every_stage_once_and_needs_only_known_stages() -> None:
    names = [s.name for s in stages.SUITE]
    assert len(names) == len(set(names))
    for stage in stages.SUITE:
        assert set(stage.needs) <= set(names), stage


def test_the_suite_covers_every_molecule_scenario_of_the_makefile() -> None:
    makefile = (stages.REPO / "Makefile").read_text()
    scenarios = re.search(r"^SCENARIOS \?= (.+)$", makefile, re.M)[1].split()
    targets = {s.target for s in stages.SUITE}
    assert {f"molecule-{s}" for s in scenarios} <= targets
    for name in ("lint", "docs", "unit", "integration", "journey", "sanity"):
        assert name in targets
    # make test runs the parts of make test-next, each as a stage
    parts = re.search(r"^test-next: (.+?) ##", makefile, re.M)[1].split()
    assert len(parts) == 3 and set(parts) <= targets, parts


def integration_pytest_line() -> str:
    """The pytest command line of `make integration`, as make would run it."""
    run = subprocess.run(
        ["make", "--no-print-directory", "-n", "integration"],
        cwd=stages.REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return next(line for line in run.stdout.splitlines() if " --dist loadfile " in line)


def test_make_integration_runs_every_test_file_once_the_first_ones_first() -> None:
    pytest_line = integration_pytest_line()
    files = [w for w in pytest_line.split() if w.startswith("tests/integration/")]
    every = sorted(
        str(p.relative_to(stages.REPO))
        for p in (stages.REPO / "tests" / "integration").glob("test_*.py")
    )
    assert sorted(files) == every  # each once: a file named first is not run twice
    first = re.search(
        r"^INTEGRATION_FIRST := ((?:.*\\\n)*.*)$", (stages.REPO / "Makefile").read_text(), re.M
    )
    names = first[1].replace("\\", " ").split()
    assert files[: len(names)] == [f"tests/integration/test_{n}.py" for n in names]
    assert files[-1].startswith("tests/integration/test_bad_input_")


def test_make_integration_options_keep_the_files_in_their_order(tmp_path: Path) -> None:
    # pytest-xdist's loadfile otherwise starts the files with the most tests first: the
    # bad-input tables would run before day two, and the time budget would leave out the rest.
    words = integration_pytest_line().split()
    options = words[
        words.index("pytest") + 1 : words.index("tests/integration/test_new_workers_user.py")
    ]
    options = [w for w in options if not w.startswith("--basetemp=")]
    options[options.index("-n") + 1] = "1"
    log = tmp_path / "order"
    test = "def test_{i}():\n    open({log!r}, 'a').write('{name}\\n')\n"
    (tmp_path / "test_small.py").write_text(test.format(i=0, log=str(log), name="small"))
    (tmp_path / "test_large.py").write_text(
        "".join(test.format(i=i, log=str(log), name="large") for i in range(3))
    )
    subprocess.run(
        [
            str(Path(sys.executable)),
            "-m",
            "pytest",
            *options,
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "base"),
            "test_small.py",
            "test_large.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert log.read_text().split() == ["small", "large", "large", "large"]


def test_unknown_stage_and_bad_jobs_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        stages.main(["--only", "nope"])
    assert "unknown stage(s): nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        stages.main(["--jobs", "0", "--only", "lint"])
    assert "--jobs must be 1 or more, got 0" in capsys.readouterr().err


def test_cpu_line_says_how_busy_the_machine_was() -> None:
    line = machine_load.cpu_line((100.0, 400.0), (160.0, 520.0))
    assert line.startswith("machine CPU: 1:00 busy of 2:00 (50% of "), line
    assert machine_load.cpu_line(None, (1.0, 2.0)) == ""
    assert machine_load.cpu_line((1.0, 2.0), (1.0, 2.0)) == ""
    reading = machine_load.cpu_times()
    if reading is not None:  # Linux
        assert 0 <= reading[0] <= reading[1]


def test_each_stage_records_its_test_files_cpu_and_the_summary_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stage's pytest would write into the folder the stage's environment names; this
    # stage writes what tests/conftest.py writes, from that variable.
    write = (
        'mkdir -p "$CLOUDTPU_CPU_REPORT_DIR" && echo \'{"tests/x/test_a.py": '
        '{"cpu": 12.5, "wall": 30, "tests": 4}}\' > "$CLOUDTPU_CPU_REPORT_DIR/gw0-1.json"'
    )
    stale = tmp_path / "cpu" / "pytesty" / "old-1.json"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"tests/x/test_gone.py": {"cpu": 99}}')
    suite = (Stage("pytesty", "pytesty"),)
    assert stages.run(suite, jobs=1, log_dir=tmp_path, command=shell({"pytesty": write})) == 0
    out = capsys.readouterr().out
    assert "test files by CPU" in out, out
    row = r"^\s+12\.5s cpu\s+30\.0s wall\s+4 tests  pytesty\s+tests/x/test_a\.py$"
    assert re.search(row, out, re.M), out
    assert "test_gone" not in out, "a folder left by an earlier run is emptied first"
