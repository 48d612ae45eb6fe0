#!/usr/bin/env bash
# Make sure a Docker daemon answers. On a fresh Debian/Ubuntu machine this installs
# docker.io and starts dockerd in the background; where a daemon already answers it
# does nothing. Safe to run repeatedly.
set -euo pipefail

log() { printf 'ensure-docker: %s\n' "$*" >&2; }
# shellcheck source=tools/lib/retry.sh
. "$(dirname "$0")/lib/retry.sh"

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    log "no Docker daemon answers and dockerd is not installed; run as root or install docker.io"
    exit 1
  fi
  log "installing docker.io (about a minute)"
  export DEBIAN_FRONTEND=noninteractive
  install_docker() { apt-get update -qq && apt-get install -y -qq docker.io >/dev/null; }
  retry 3 15 "installing docker.io" install_docker
fi

if ! docker info >/dev/null 2>&1; then
  if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start docker || true
  fi
fi

if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    log "dockerd is installed but not running; start it (as root) and retry"
    exit 1
  fi
  log_file=${DOCKERD_LOG:-/var/log/cloudtpu-dockerd.log}
  log "starting dockerd in the background (log: $log_file)"
  setsid dockerd >"$log_file" 2>&1 < /dev/null &
fi

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "Docker daemon is up"
    exit 0
  fi
  sleep 1
done
log "Docker daemon did not answer within 60 s; see ${DOCKERD_LOG:-/var/log/cloudtpu-dockerd.log}"
exit 1
