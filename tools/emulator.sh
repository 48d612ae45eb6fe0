#!/usr/bin/env bash
# Start or stop the local TPU API emulator with its Docker backend, in the background.
#
#   tools/emulator.sh start DIR PORT [STATE_FILE]   prints the API URL once it answers
#   tools/emulator.sh stop DIR                      stops it; its pod containers are removed
#
# DIR keeps emulator.pid, emulator.log and url. Starting an emulator that already runs
# from DIR prints its URL and does nothing else.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR PORT [STATE] | stop DIR" >&2; exit 2; }
mkdir -p "$dir"
pidfile="$dir/emulator.pid"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "$cmd" in
  start)
    port=${3:?port required}
    state=${4:-$repo/tools/tpu_emulator/demo-state.yml}
    if running && [ -s "$dir/url" ]; then
      cat "$dir/url"
      exit 0
    fi
    rm -f "$dir/url"
    # In a session of its own (it outlives the caller); the shell records its own pid, then
    # becomes the emulator. exec: no shell stays behind holding the caller's stdout, so
    # `make demo | tee demo.log` ends when the demo is up.
    (cd "$repo" && exec setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" \
      "$python" -m tools.tpu_emulator --state "$state" --backend docker \
      --port "$port" --url-file "$dir/url" >"$dir/emulator.log" 2>&1 < /dev/null &)
    for _ in $(seq 1 100); do
      if [ -s "$dir/url" ] && running; then
        cat "$dir/url"
        exit 0
      fi
      if [ -f "$pidfile" ] && ! running; then break; fi
      sleep 0.2
    done
    echo "emulator did not start; its log ($dir/emulator.log):" >&2
    tail -n 20 "$dir/emulator.log" >&2 || true
    exit 1
    ;;
  stop)
    if running; then
      pid=$(cat "$pidfile")
      kill -TERM "$pid"
      for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
      done
      if kill -0 "$pid" 2>/dev/null; then
        echo "emulator $pid did not stop within 60 s; killing it" >&2
        kill -KILL "$pid" || true
      fi
    fi
    rm -f "$pidfile" "$dir/url"
    ;;
  *)
    echo "usage: $0 start DIR PORT [STATE] | stop DIR" >&2
    exit 2
    ;;
esac
