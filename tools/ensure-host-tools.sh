#!/usr/bin/env bash
# Make sure this machine has the programs the playbooks use from the controller's side when
# they are there, so the tests run those paths too: rsync (sync.yml sends a folder with rsync
# when both this machine and the worker have it, else as one tar archive). On Debian/Ubuntu,
# as root, this installs what is missing; otherwise it says what is missing and what the tests
# then skip. Safe to run repeatedly.
set -euo pipefail

log() { printf 'ensure-host-tools: %s\n' "$*" >&2; }
# shellcheck source=tools/lib/retry.sh
. "$(dirname "$0")/lib/retry.sh"

tools=(rsync)
missing=()
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "missing: ${missing[*]}; install it to run sync.yml's rsync path (its tests skip without it)"
  exit 0
fi
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's own output is printed only when the install fails.
install_tools() {
  local out
  out=$(apt-get update -qq 2>&1 && apt-get install -y -qq "${missing[@]}" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}
# Not fatal: without rsync sync.yml sends a tar archive, and the rsync tests skip, saying why.
retry 3 15 "installing ${missing[*]}" install_tools ||
  log "could not install ${missing[*]}; the tests of sync.yml's rsync path skip"
