#!/usr/bin/env bash
# Cold install of jax[tpu] into a fresh venv, uv against pip, side by side in one run.
#
#   bench/framework/run.sh [ROUNDS] [JAX_VERSION]      (defaults: 3 rounds, jax 0.10.2)
#
# Every measurement gets a fresh container of the worker image (cloudtpu-pod-worker:current,
# `make image`), so no package cache exists: python3.11-venv is installed and the venv created
# first (not timed), then only the install of jax[tpu]==VERSION is timed, with the installer's
# cache off. Bytes downloaded are the container's own network counter
# (/sys/class/net/eth0/statistics/rx_bytes) read right before and after the install. The order
# of the installers rotates between rounds. uv is the version the python role pins, installed
# from its wheel into a tool venv, measured as the framework role runs it and once more with
# --compile-bytecode (pip writes .pyc files while installing, uv by default does not); pip is the
# venv's own (what the role's pip installer uses).
#
# Prints a Markdown table; raw rows go to bench/results/framework.tsv (not in git).
set -euo pipefail

ROUNDS=${1:-3}
JAX_VERSION=${2:-0.10.2}
UV_VERSION=${UV_VERSION:-0.13.8}
IMAGE=${IMAGE:-cloudtpu-pod-worker:current}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$HERE/bench/results/framework.tsv
PREFIX=cloudtpu-bench-framework-$$

docker image inspect "$IMAGE" >/dev/null 2>&1 || {
  echo "no image $IMAGE: run 'make image' first" >&2
  exit 1
}
mkdir -p "$(dirname "$OUT")"

cleanup() {
  # Only this run's containers: their names carry this shell's PID.
  docker ps -aq --filter "name=^$PREFIX-" | xargs -r docker rm -f >/dev/null 2>&1 || true
}
trap cleanup EXIT

# One measurement in a fresh container: prints "installer seconds rx_bytes venv_bytes packages".
measure() {
  local installer=$1 round=$2 name=$PREFIX-$1-$2
  docker run -d --name "$name" "$IMAGE" sleep infinity >/dev/null
  docker exec "$name" sh -ec '
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq python3.11-venv >/dev/null 2>&1
    python3.11 -m venv /opt/bench-venv
  '
  if [ "$installer" != pip ]; then
    docker exec "$name" sh -ec "
      python3.11 -m venv /opt/uv-tool
      /opt/uv-tool/bin/pip install -q --disable-pip-version-check --no-cache-dir uv==$UV_VERSION
    "
  fi
  local install
  if [ "$installer" != pip ]; then
    install="UV_SYSTEM_CERTS=1 UV_NO_PROGRESS=1 /opt/uv-tool/bin/uv pip install --no-cache \
      $([ "$installer" = uv-bytecode ] && echo --compile-bytecode) \
      --python /opt/bench-venv/bin/python 'jax[tpu]==$JAX_VERSION'"
  else
    install="/opt/bench-venv/bin/pip install -q --disable-pip-version-check --no-cache-dir \
      'jax[tpu]==$JAX_VERSION'"
  fi
  docker exec "$name" sh -ec "
    rx0=\$(cat /sys/class/net/eth0/statistics/rx_bytes)
    t0=\$(date +%s.%N)
    $install >/tmp/install.log 2>&1 || { cat /tmp/install.log >&2; exit 1; }
    t1=\$(date +%s.%N)
    rx1=\$(cat /sys/class/net/eth0/statistics/rx_bytes)
    size=\$(du -sb /opt/bench-venv | cut -f1)
    count=\$(/opt/bench-venv/bin/python -c 'import importlib.metadata as m; print(len(list(m.distributions())))')
    /opt/bench-venv/bin/python -c 'import jax; jax.devices()' >/dev/null 2>&1
    awk -v a=\"\$t0\" -v b=\"\$t1\" -v r=\$((rx1 - rx0)) -v s=\"\$size\" -v n=\"\$count\" \
      'BEGIN { printf \"$installer %.2f %d %d %d\\n\", b - a, r, s, n }'
  "
  docker rm -f "$name" >/dev/null
}

printf 'round\tinstaller\tseconds\trx_bytes\tvenv_bytes\tdistributions\n' >"$OUT"
for round in $(seq 1 "$ROUNDS"); do
  case $((round % 3)) in
    1) order="uv uv-bytecode pip" ;;
    2) order="pip uv uv-bytecode" ;;
    0) order="uv-bytecode pip uv" ;;
  esac
  for installer in $order; do
    line=$(measure "$installer" "$round")
    read -r who secs rx size count <<<"$line"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$who" "$secs" "$rx" "$size" "$count" | tee -a "$OUT" >&2
  done
done

python3 - "$OUT" "$JAX_VERSION" "$UV_VERSION" "$ROUNDS" <<'PY'
import csv, os, statistics, sys

path, jax, uv, rounds = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = {k: [r for r in rows if r["installer"] == k] for k in ("uv", "uv-bytecode", "pip")}
med = {k: statistics.median(float(r["seconds"]) for r in v) for k, v in by.items()}
rng = {k: (min(float(r["seconds"]) for r in v), max(float(r["seconds"]) for r in v)) for k, v in by.items()}
rx = {k: statistics.median(int(r["rx_bytes"]) for r in v) for k, v in by.items()}
size = {k: statistics.median(int(r["venv_bytes"]) for r in v) for k, v in by.items()}
count = {k: by[k][0]["distributions"] for k in by}
print(f"jax[tpu]=={jax} into a fresh Python 3.11 venv, no cache, fresh container each; "
      f"median (min-max) of {rounds} rounds; {os.cpu_count()} CPUs, "
      f"load average {os.getloadavg()[0]:.1f} at the end.\n")
print("| installer | wall time | downloaded (rx bytes) | venv size | distributions |")
print("|---|---|---|---|---|")
labels = (
    ("uv", f"uv {uv} (`uv pip install --no-cache`), as the role runs it"),
    ("uv-bytecode", f"uv {uv} with `--compile-bytecode` (writes .pyc files, as pip does)"),
    ("pip", "pip, the venv's own (`pip install --no-cache-dir`)"),
)
for k, label in labels:
    lo, hi = rng[k]
    print(f"| {label} | {med[k]:.1f} s ({lo:.1f}-{hi:.1f}) | {rx[k] / 1e6:.0f} MB | "
          f"{size[k] / 1e9:.2f} GB | {count[k]} |")
print(f"\nRatios of medians: pip / uv {med['pip'] / med['uv']:.2f}x wall time "
      f"({rx['pip'] / rx['uv']:.2f}x bytes downloaded); pip / uv with bytecode "
      f"{med['pip'] / med['uv-bytecode']:.2f}x.")
PY
