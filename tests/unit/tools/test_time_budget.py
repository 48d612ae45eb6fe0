"""The suite's time budget: tools/time_budget.py, its pytest plugin and tools/stages.py's use of
it (what does not fit is left out and said; a stage still running at the end fails)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import stages, time_budget
from tools.stages import Stage

REPO = Path(__file__).resolve().parents[3]


def test_suite_start_is_the_environments_time_unless_missing_bad_or_in_the_future() -> None:
    env = time_budget.SUITE_START_ENV
    assert time_budget.suite_start({env: "1000"}, now=2000) == 1000
    assert time_budget.suite_start({}, now=2000) == 2000
    assert time_budget.suite_start({env: "soon"}, now=2000) == 2000
    assert time_budget.suite_start({env: "3000"}, now=2000) == 2000


def test_start_by_is_read_and_a_bad_value_is_refused_naming_it() -> None:
    assert time_budget.start_by({}) is None
    assert time_budget.start_by({time_budget.START_BY_ENV: "1234.5"}) == 1234.5
    with pytest.raises(ValueError, match=r"CLOUDTPU_TESTS_START_BY .*'later'"):
        time_budget.start_by({time_budget.START_BY_ENV: "later"})


def test_a_test_starts_before_the_last_start_or_as_a_started_journeys_next_step() -> None:
    assert time_budget.may_start(now=99, last_start=100)
    assert not time_budget.may_start(now=100, last_start=100)
    assert time_budget.may_start(now=500, last_start=100, continues=True)
    assert time_budget.may_start(now=500, last_start=None)


def test_slowness_is_the_finished_stages_wall_over_their_reference() -> None:
    assert time_budget.slowness([]) == 1.0
    assert time_budget.slowness([(300.0, 100.0), (100.0, 100.0)]) == 2.0
    assert time_budget.slowness([(50.0, 100.0)]) == 1.0  # never faster than the reference
    assert time_budget.slowness([(999.0, 0.0)]) == 1.0  # a stage without reference says nothing


def test_a_stage_fits_when_its_scaled_reference_ends_before_the_end() -> None:
    contention = time_budget.CONTENTION
    assert time_budget.fits(now=0, end=200 * 3 * contention, reference=200, factor=3)
    assert not time_budget.fits(now=1, end=200 * 3 * contention, reference=200, factor=3)


def _pytest_run(tmp_path: Path, last_start: float) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_plain.py").write_text(
        "def test_one():\n    pass\n\ndef test_two():\n    pass\n", encoding="utf-8"
    )
    # A journey's first step ends past the last start; its second step still runs.
    (tmp_path / "test_trip.py").write_text(
        "import os, time\nimport pytest\npytestmark = pytest.mark.journey_step\n\n"
        "def test_up():\n"
        f"    while time.time() <= float(os.environ['{time_budget.START_BY_ENV}']):\n"
        "        time.sleep(0.1)\n\n"
        "def test_down():\n    pass\n",
        encoding="utf-8",
    )
    env = {**os.environ, time_budget.START_BY_ENV: f"{last_start:.3f}", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.time_budget_plugin",
            "-ra",
            "-v",
            "-p",
            "no:cacheprovider",
            "test_trip.py",
            "test_plain.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_past_the_last_start_tests_are_skipped_but_a_started_journey_goes_on(
    tmp_path: Path,
) -> None:
    # The journey's first step ends past the last start (it waits for it); the subprocess's
    # start has 10 s to reach it.
    run = _pytest_run(tmp_path, last_start=time.time() + 10.0)
    out = run.stdout
    if "test_trip.py::test_up SKIPPED" in out:
        pytest.skip("pytest took over 10 s to start here: the journey began past its last start")
    assert run.returncode == 0, out + run.stderr
    assert "test_trip.py::test_up PASSED" in out, out
    assert "test_trip.py::test_down PASSED" in out, out
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED [")]
    # one line for all: the location is the plugin's (the path is relative to the rootdir)
    assert len(skipped) == 1, out
    assert skipped[0].startswith("SKIPPED [2] "), out
    assert skipped[0].endswith(
        f"tests/time_budget_plugin.py:{_skip_line()}: {time_budget.SKIP_REASON}"
    ), out
    assert stages.left_out(_log(tmp_path, out)) == 2


def test_with_the_last_start_passed_nothing_starts_and_the_count_is_read(tmp_path: Path) -> None:
    run = _pytest_run(tmp_path, last_start=time.time() - 1)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 skipped" in run.stdout, run.stdout
    assert stages.left_out(_log(tmp_path, run.stdout)) == 4


def test_without_a_last_start_every_test_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != time_budget.START_BY_ENV}
    (tmp_path / "test_plain.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.time_budget_plugin",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_plain.py",
        ],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "1 passed" in run.stdout, run.stdout + run.stderr


def _skip_line() -> int:
    text = (REPO / "tests" / "time_budget_plugin.py").read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(text, 1) if "pytest.skip(" in line)


def _log(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "stage.log"
    log.write_text(text, encoding="utf-8")
    return log


def _shell(scripts: dict[str, str]):
    return lambda stage: ["sh", "-c", scripts[stage.target]]


def test_the_budget_leaves_out_what_does_not_fit_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = tmp_path / "start_by"
    suite = (
        Stage("check", "check", reference=0.5),
        Stage("tests", "tests", start_by=1),
        Stage("small", "small", ("check",), gated=True, reference=0.1),
        Stage("big", "big", ("check",), gated=True, reference=3600),
        Stage("after-big", "after-big", ("big",)),
    )
    scripts = {
        "check": "sleep 1",
        "tests": f'echo "$CLOUDTPU_TESTS_START_BY" > {seen}; '
        f'printf "SKIPPED [5] tests/x.py:3: %s\\n" "{time_budget.SKIP_REASON}"',
        "small": "true",
        "big": "true",
        "after-big": "true",
    }
    start = time.time() - 10
    code = stages.run(
        suite,
        2,
        log_dir=tmp_path / "logs",
        command=_shell(scripts),
        budget=600,
        suite_start=start,
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert abs(float(seen.read_text()) - (start + 600 - 60)) <= 2, out
    assert "small started" in out and "big started" not in out, out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "passed; 5 tests not run (time budget)" in rows["tests"], out
    assert "not run: time budget: about" in rows["big"], out
    assert "not run: time budget: needs big" in rows["after-big"], out
    assert (
        "left out by the time budget (not failures; STAGE_BUDGET=0 runs all): tests (5 "
        "tests), big, after-big" in out
    ), out


def test_a_stage_still_running_at_the_end_is_stopped_with_its_children_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child = tmp_path / "child.pid"
    suite = (Stage("hang", "hang"), Stage("later", "later", ("hang",)))
    scripts = {"hang": f"sleep 300 & echo $! > {child}; wait", "later": "true"}
    began = time.monotonic()
    code = stages.run(
        suite,
        1,
        log_dir=tmp_path / "logs",
        command=_shell(scripts),
        budget=4,
        suite_start=time.time(),
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert time.monotonic() - began < 60, out
    assert "stage hang FAILED: stopped at the end of the time budget" in out, out
    assert "not run: time budget: the time budget ended" in out, out
    stat = Path(f"/proc/{int(child.read_text())}/stat")
    time.sleep(0.5)
    # the stage's own child went with it (gone, or a zombie left to whoever adopted it)
    assert not stat.exists() or stat.read_text().split(") ")[1][0] == "Z"


def test_without_a_budget_every_stage_runs_and_no_last_start_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = tmp_path / "start_by"
    suite = (
        Stage("tests", "tests", start_by=1),
        Stage("big", "big", gated=True, reference=10**6),
    )
    scripts = {"tests": f'echo "x${{CLOUDTPU_TESTS_START_BY:-}}" > {seen}', "big": "true"}
    env = os.environ.pop(time_budget.START_BY_ENV, None)
    try:
        code = stages.run(suite, 2, log_dir=tmp_path / "logs", command=_shell(scripts))
    finally:
        if env is not None:
            os.environ[time_budget.START_BY_ENV] = env
    out = capsys.readouterr().out
    assert code == 0, out
    assert seen.read_text().strip() == "x", out
    assert "big started" in out, out


def test_the_checks_always_run_whole_and_the_rest_is_bounded() -> None:
    bounded = {s.name for s in stages.SUITE if s.gated or s.start_by}
    assert {"lint", "unit", "sanity", "docs"}.isdisjoint(bounded)
    assert {"integration", "journey"} <= {s.name for s in stages.SUITE if s.start_by}
    assert all(s.reference > 0 for s in stages.SUITE if s.gated)
    # the journeys first: one that has started runs to its end, so it needs the most time left
    order = [s.name for s in stages.SUITE if s.name not in ("setup", "image", "host-tools")]
    assert order[0] == "journey"
    journey = next(s for s in stages.SUITE if s.name == "journey")
    assert journey.start_by == max(s.start_by for s in stages.SUITE)


@pytest.mark.parametrize("check_reference, waits", [(0.1, True), (100.0, False)])
def test_on_a_slow_machine_only_a_narrow_stage_starts_beside_a_journey(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], check_reference: float, waits: bool
) -> None:
    # The check takes about 1 s: against a reference of 0.1 s the machine is 10x slow, against
    # 100 s it is not slow at all.
    marks = tmp_path / "marks"
    suite = (
        Stage("journey", "journey", start_by=1, keep_cpus=True),
        Stage("check", "check", reference=check_reference),
        Stage("tests", "tests", start_by=1),
        Stage("wide", "wide", start_by=1, narrow=(("WIDE_JOBS", "1"),)),
    )
    scripts = {
        "journey": f"sleep 4; echo journey-end >> {marks}",
        "check": "sleep 1",
        "tests": f"echo tests-start >> {marks}",
        "wide": f'echo "wide-jobs-${{WIDE_JOBS:-2}}" >> {marks}',
    }
    code = stages.run(
        suite,
        2,
        log_dir=tmp_path / "logs",
        command=_shell(scripts),
        budget=600,
        suite_start=time.time(),
    )
    assert code == 0, capsys.readouterr().out
    order = marks.read_text().split()
    if waits:  # the stage with a narrow form runs so beside the journey; the other one waits
        assert order == ["wide-jobs-1", "journey-end", "tests-start"]
    else:
        assert order == ["tests-start", "wide-jobs-2", "journey-end"]
