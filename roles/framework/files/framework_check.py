# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Import the venv's ML framework, list the devices it sees, and tell TPU from CPU fallback.

Installed by cloudtpu.pod.framework as <venv>/bin/cloudtpu-framework-check and run with the
venv's python. Prints one JSON object on the last line of stdout (the framework's own logs go
to stderr) and exits 0 when the verdict is good, 1 when it is not, 2 when the import fails.

    cloudtpu-framework-check --framework jax --device-glob '/dev/accel*' --require-tpu auto

`--require-tpu auto`: where TPU device files exist the framework must see TPU devices; where
none exist (a container, a CPU host) CPU devices are a "CPU fallback" and pass. `true`: TPU
devices are required. `false`: whatever the framework sees passes.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import sys
import time
import traceback
from importlib import metadata
from typing import Any

REQUIRE_CHOICES = ("auto", "true", "false")


def device_files(patterns: list[str]) -> list[str]:
    """The device files that match any of the glob patterns, sorted.

    The patterns are /dev ones (the role accepts only TPU device globs); tests point /dev at a
    folder of fake device files with the environment variable CLOUDTPU_DEVICE_ROOT.
    """
    root = os.environ.get("CLOUDTPU_DEVICE_ROOT", "")
    if root:
        patterns = [root.rstrip("/") + p[4:] if p.startswith("/dev/") else p for p in patterns]
    return sorted({path for pattern in patterns for path in glob.glob(pattern)})


def verdict(
    framework: str,
    require: str,
    files: list[str],
    platforms: list[str],
    patterns: list[str],
) -> tuple[bool, str, str]:
    """Judge what the framework sees: (ok, mode, reason)."""
    kinds = sorted({p.lower() for p in platforms}) or ["no"]
    sees = f"{framework} sees {', '.join(kinds)} devices"
    tpu_seen = "tpu" in kinds
    where = ", ".join(patterns) or "(no pattern)"
    if require == "false":
        mode = "TPU" if tpu_seen else "CPU fallback"
        return True, mode, f"{sees}; tpu_framework_require_tpu is false, so anything passes"
    if tpu_seen:
        return True, "TPU", f"{sees} (device files: {', '.join(files) or 'none'})"
    if files:
        return (
            False,
            "no TPU",
            f"TPU device files exist ({', '.join(files)}) but {sees}: another process may hold "
            "the TPU (libtpu allows one per host; look for /tmp/libtpu_lockfile and run "
            "tpu-unlock), or the installed libtpu does not fit this TPU generation",
        )
    if require == "true":
        return (
            False,
            "no TPU",
            f"tpu_framework_require_tpu is true but no device file matches {where}; {sees}",
        )
    return True, "CPU fallback", f"no TPU device file matches {where}; {sees}"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def probe_jax() -> dict[str, Any]:
    import jax

    devices = jax.devices()
    return {
        "version": jax.__version__,
        "libtpu": _version("libtpu"),
        "devices": [str(d) for d in devices],
        "platforms": [d.platform for d in devices],
    }


def probe_torch_xla() -> dict[str, Any]:
    import torch
    import torch_xla
    import torch_xla.runtime as xr

    devices = torch_xla.devices()
    kind = str(xr.device_type())
    return {
        "version": torch_xla.__version__,
        "torch": torch.__version__,
        "libtpu": _version("libtpu"),
        "devices": [str(d) for d in devices],
        "platforms": [kind] * len(devices),
    }


PROBES = {"jax": probe_jax, "torch_xla": probe_torch_xla}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(PROBES), required=True)
    parser.add_argument("--device-glob", action="append", default=[], dest="globs")
    parser.add_argument("--require-tpu", choices=REQUIRE_CHOICES, default="auto")
    args = parser.parse_args(argv)

    files = device_files(args.globs)
    report: dict[str, Any] = {
        "framework": args.framework,
        "python": platform.python_version(),
        "device_files": files,
        "require_tpu": args.require_tpu,
        "env": {},
    }
    if args.framework == "torch_xla" and not files and args.require_tpu != "true":
        # torch_xla with PJRT_DEVICE=TPU fails outright without a TPU; the fallback is PJRT's CPU.
        if os.environ.get("PJRT_DEVICE", "TPU") == "TPU":
            os.environ["PJRT_DEVICE"] = "CPU"
    report["env"] = {k: os.environ[k] for k in ("PJRT_DEVICE", "JAX_PLATFORMS") if k in os.environ}

    started = time.monotonic()
    try:
        report.update(PROBES[args.framework]())
    except Exception as exc:  # noqa: BLE001 - any import or runtime failure is the answer
        report.update(
            ok=False,
            mode="import failed",
            reason=f"{args.framework} failed: {type(exc).__name__}: {exc}",
            traceback=traceback.format_exc().splitlines()[-12:],
            seconds=round(time.monotonic() - started, 2),
        )
        print(json.dumps(report))
        return 2
    report["seconds"] = round(time.monotonic() - started, 2)
    ok, mode, reason = verdict(
        args.framework, args.require_tpu, files, report["platforms"], args.globs
    )
    report.update(ok=ok, mode=mode, reason=reason)
    sys.stdout.flush()
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
