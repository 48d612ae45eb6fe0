"""tools/cpu_report.py: CPU per test file, added up over pytest processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools import cpu_report


def test_a_child_process_counts_for_the_file_of_the_test_that_waited_for_it(tmp_path: Path):
    recorder = cpu_report.Recorder(tmp_path)
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    with recorder.measure("tests/a/test_x.py::test_one"):
        subprocess.run([sys.executable, "-c", burn], check=True)
    with recorder.measure("tests/a/test_x.py::test_two[p]"):
        pass
    with recorder.measure("tests/a/test_y.py::test_three"):
        pass
    entry = recorder.files["tests/a/test_x.py"]
    assert entry["tests"] == 2
    assert entry["cpu"] >= 0.3, entry
    assert recorder.files["tests/a/test_y.py"]["cpu"] < 0.3
    assert recorder.write("gw0").name.startswith("gw0-")


def test_the_files_of_every_process_are_added_up_and_the_largest_come_first(tmp_path: Path):
    (tmp_path / "gw0-1.json").write_text(
        json.dumps({"t/a.py": {"cpu": 10, "wall": 20, "tests": 2}, "t/b.py": {"cpu": 1}})
    )
    (tmp_path / "gw1-2.json").write_text(json.dumps({"t/a.py": {"cpu": 5, "wall": 1, "tests": 1}}))
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "odd.json").write_text(json.dumps({"t/c.py": {"cpu": "x"}, "t/d.py": []}))
    totals = cpu_report.totals(tmp_path)
    assert totals["t/a.py"] == {"cpu": 15, "wall": 21, "tests": 3}
    assert totals["t/c.py"]["cpu"] == 0
    lines = cpu_report.summary([("integration", tmp_path)], count=2)
    assert len(lines) == 2
    assert lines[0].startswith("    15.0s cpu") and lines[0].endswith("integration  t/a.py")
    assert lines[1].endswith("t/b.py")


def test_nothing_is_recorded_or_written_without_the_variable(monkeypatch, tmp_path: Path):
    monkeypatch.delenv(cpu_report.ENV, raising=False)
    assert cpu_report.from_environment() is None
    assert cpu_report.Recorder(tmp_path / "none").write("main") is None
    assert not (tmp_path / "none").exists()
    assert cpu_report.totals(tmp_path / "missing") == {}
