"""tpu-unlock takes only TPU device globs, and signals nobody when a matched device is refused.

`--device-glob /dev/*` once made `--kill` end every process holding /dev/fuse, /dev/null and the
like. The tool checks its globs itself (the roles check them too, in tpu_checks.py): only the
TPU families are accepted, everything else is a usage error before anything is looked at.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_checks

from tests.tpu_unlock_harness import PROGRAM, Pod, cli, tpu_unlock


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[Pod]:
    fake = Pod(tmp_path)
    yield fake
    fake.cleanup()


def test_the_tool_and_the_roles_share_one_rule() -> None:
    assert tpu_unlock.DEVICE_FAMILIES.pattern == tpu_checks.DEVICE_FAMILIES.pattern


REFUSED = ["/dev/*", "/dev/fuse", "/dev/input/*", "/dev/vfio/*", "/dev/vfio/vfio", "/dev/acc*"]
ACCEPTED = ["/dev/accel*", "/dev/accel[0-9]*", "/dev/accel/*", "/dev/vfio/[0-9]*", "/dev/accel0"]


@pytest.mark.parametrize("pattern", REFUSED)
def test_a_non_tpu_glob_is_a_usage_error(pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.parse_args(["--device-glob", pattern, "--kill"])
    assert exit_.value.code == tpu_unlock.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"--device-glob {pattern}: not a TPU device pattern" in err, err
    assert "allowed: /dev/accel*, /dev/accel/*, /dev/vfio/[0-9]*" in err, err


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_tpu_globs_are_accepted(pattern: str) -> None:
    assert cli.parse_args(["--device-glob", pattern]).device_globs == [pattern]


def test_a_non_tpu_glob_signals_nothing(pod: Pod) -> None:
    """A real holder of a file that `<dev>/*` matches survives; the locks stay."""
    pod.stale()
    fuse = pod.root / "dev" / "fuse"
    fuse.write_bytes(b"")
    innocent = pod.hold(fuse)
    holder = pod.hold()
    result = pod.run("--device-glob", str(pod.root / "dev" / "*"), "--kill", "--grace", "1")
    assert result.returncode == tpu_unlock.EXIT_USAGE, result
    assert "not a TPU device pattern" in result.stderr, result.stderr
    assert innocent.poll() is None and holder.poll() is None, "a process was signalled"
    assert pod.locks[0].exists() and pod.log_dir.exists()


def test_a_non_tpu_glob_from_the_environment_is_refused(pod: Pod) -> None:
    env = dict(os.environ, TPU_UNLOCK_DEVICE_GLOB="/dev/*")
    result = subprocess.run(
        [*PROGRAM, "--json", "--kill"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == tpu_unlock.EXIT_USAGE, result
    assert "--device-glob /dev/*: not a TPU device pattern" in result.stderr


def test_a_glob_outside_the_device_root_is_refused(pod: Pod, tmp_path: Path) -> None:
    result = pod.run("--device-glob", str(tmp_path / "other" / "accel*"))
    assert result.returncode == tpu_unlock.EXIT_USAGE, result


def test_nobody_is_killed_when_a_matched_device_is_refused(pod: Pod) -> None:
    """accel9 is a link to /dev/null: it is refused, and so --kill ends nobody, not even the
    holder of a good device (the glob is not to be trusted)."""
    (pod.root / "dev" / "accel9").symlink_to("/dev/null")
    pod.stale()
    holder = pod.hold()
    code, out = pod.run_json("--kill", "--grace", "1")
    assert holder.poll() is None, f"a holder was signalled: {out}"
    assert out["killed"] == [], out
    assert code == tpu_unlock.EXIT_REFUSED, out
    assert "--kill ignored" in out["message"], out
    assert pod.locks[0].exists(), out
