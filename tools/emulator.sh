#!/usr/bin/env bash
# Start or stop the local TPU API emulator with its Docker backend, and the demo's bucket
# service beside it, in the background.
#
#   tools/emulator.sh start DIR PORT [STATE_FILE]   prints the API URL once both answer
#   tools/emulator.sh bucket DIR NAME               makes bucket NAME in the bucket service
#   tools/emulator.sh stop DIR                      stops both; its pod containers are removed
#
# The TPU API listens on 127.0.0.1:PORT. The bucket service is gcp-storage-emulator (a Cloud
# Storage JSON API that takes no credentials) on the docker bridge's gateway at the same port:
# the workers reach it as host.docker.internal:PORT (tools/demo.sh env gives that URL to the
# playbooks), the control machine at the address in DIR/storage-url, other machines not at all.
# `bucket` is the demo's `gcloud storage buckets create gs://NAME` (a bucket that exists is
# kept). DIR keeps emulator.pid, emulator.log and url, and the bucket service's storage.pid,
# storage.log, storage-url and buckets/ (the objects, kept when the service stops). Starting
# from a DIR whose services already run prints the API URL and does nothing else.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
cmd=${1:-}
dir=${2:-}
usage="usage: $0 start DIR PORT [STATE] | bucket DIR NAME | stop DIR"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile="$dir/emulator.pid"
storage_pid="$dir/storage.pid"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running() { alive "$pidfile"; }

# In a session of its own (it outlives the caller); the shell records its own pid, then becomes
# the service. exec: no shell stays behind holding the caller's stdout, so
# `make demo | tee demo.log` ends when the demo is up.
launch() {
  local pid=$1 log=$2
  shift 2
  (cd "$repo" && exec setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pid" "$@" \
    >"$log" 2>&1 </dev/null &)
}

answers() {
  "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" \
    2>/dev/null
}

# Both services are asked to stop at once, then waited for (each takes a second or two).
stop_all() {
  local file pid pids=()
  for file in "$pidfile" "$storage_pid"; do
    if alive "$file"; then
      pid=$(cat "$file")
      kill -TERM "$pid" && pids+=("$pid")
    fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "process $pid of the emulator did not stop within 60 s; killing it" >&2
      kill -KILL "$pid" || true
    fi
  done
}

case "$cmd" in
  start)
    port=${3:?port required}
    state=${4:-$repo/tools/tpu_emulator/demo-state.yml}
    if running && [ -s "$dir/url" ] && alive "$storage_pid" && [ -s "$dir/storage-url" ]; then
      cat "$dir/url"
      exit 0
    fi
    if ! running; then
      rm -f "$dir/url"
      launch "$pidfile" "$dir/emulator.log" "$python" -m tools.tpu_emulator --state "$state" \
        --backend docker --port "$port" --url-file "$dir/url"
    fi
    alive "$storage_pid" || rm -f "$dir/storage-url"
    gateway=""
    if [ ! -s "$dir/storage-url" ]; then
      gateway=$(cd "$repo" && "$python" -m tools.tpu_emulator.docker_cli gateway bridge \
        2>/dev/null || true)
      if [ -z "$gateway" ]; then
        echo "the bucket service listens on the docker bridge's gateway, and Docker names none" \
          "(tools/ensure-docker.sh starts Docker)" >&2
        exit 1
      fi
    fi
    if ! alive "$storage_pid"; then
      mkdir -p "$dir/buckets"
      launch "$storage_pid" "$dir/storage.log" env STORAGE_DIR=buckets \
        "$python" -m gcp_storage_emulator -d "$dir" start --host "$gateway" --port "$port"
    fi
    for _ in $(seq 1 100); do
      if [ ! -s "$dir/storage-url" ] && alive "$storage_pid" \
        && answers "http://$gateway:$port/storage/v1/b"; then
        echo "http://$gateway:$port" >"$dir/storage-url"
      fi
      if [ -s "$dir/url" ] && running && [ -s "$dir/storage-url" ]; then
        cat "$dir/url"
        exit 0
      fi
      if { [ -f "$pidfile" ] && ! running; } || { [ -f "$storage_pid" ] && ! alive "$storage_pid"; }
      then
        break
      fi
      sleep 0.2
    done
    echo "the emulator or its bucket service did not start; their logs:" >&2
    tail -n 20 "$dir/emulator.log" "$dir/storage.log" >&2 || true
    exit 1
    ;;
  bucket)
    name=${3:?bucket name required}
    [ -s "$dir/storage-url" ] && alive "$storage_pid" || {
      echo "no bucket service runs from $dir: tools/emulator.sh start $dir PORT first" >&2
      exit 1
    }
    "$python" - "$(cat "$dir/storage-url")" "$name" <<'PY'
import json
import re
import sys
import urllib.error
import urllib.request

url, name = sys.argv[1:]
if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]", name):
    sys.exit(f"bucket name {name!r}: 3 to 63 lowercase letters, digits, - and _, as Cloud Storage"
             " names them (starting and ending with a letter or digit)")
request = urllib.request.Request(
    f"{url}/storage/v1/b?project=demo-project",
    data=json.dumps({"name": name}).encode(),
    headers={"Content-Type": "application/json"},
    method="POST",
)
try:
    urllib.request.urlopen(request, timeout=30).read()
    print(f"created gs://{name}")
except urllib.error.HTTPError as error:
    if error.code != 409:
        sys.exit(f"gs://{name}: {error.code} {error.read().decode(errors='replace')[:300]}")
    print(f"gs://{name} exists already")
PY
    ;;
  stop)
    stop_all
    rm -f "$pidfile" "$dir/url" "$storage_pid" "$dir/storage-url"
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
