"""tools/stages.py: stages side by side, needs honoured, logs printed whole, the stage table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import stages
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
    assert re.search(r"^after-bad\s+-\s+-\s+not run: needs bad$", out, re.M), out
    assert re.search(r"^bad\s+\d+:\d\d\s+\d+:\d\d\s+FAILED \(3\)$", out, re.M), out
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
    found = stages.slowest([("unit", unit), ("integration", integration), ("gone", tmp_path / "x")])
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
    for name in ("lint", "docs", "unit", "integration", "journey", "sanity", "test-next"):
        assert name in targets


def test_unknown_stage_and_bad_jobs_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        stages.main(["--only", "nope"])
    assert "unknown stage(s): nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        stages.main(["--jobs", "0", "--only", "lint"])
    assert "--jobs must be 1 or more, got 0" in capsys.readouterr().err


def test_cpu_line_says_how_busy_the_machine_was() -> None:
    line = stages.cpu_line((100.0, 400.0), (160.0, 520.0))
    assert line.startswith("machine CPU: 1:00 busy of 2:00 (50% of "), line
    assert stages.cpu_line(None, (1.0, 2.0)) == ""
    assert stages.cpu_line((1.0, 2.0), (1.0, 2.0)) == ""
    reading = stages.cpu_times()
    if reading is not None:  # Linux
        assert 0 <= reading[0] <= reading[1]
