# shellcheck shell=bash
# retry ATTEMPTS DELAY WHAT COMMAND...: run COMMAND up to ATTEMPTS times, DELAY seconds apart,
# for steps that fail for a moment (a package mirror, a lock). Says on standard error what it
# retries and, after the last attempt, that WHAT failed; returns COMMAND's last exit code.
retry() {
  local attempts=$1 delay=$2 what=$3 attempt rc
  shift 3
  for ((attempt = 1; ; attempt++)); do
    "$@" && return 0
    rc=$?
    if ((attempt >= attempts)); then
      printf '%s: %s failed %d times (exit code %d)\n' "${0##*/}" "$what" "$attempts" "$rc" >&2
      return "$rc"
    fi
    printf '%s: %s failed (exit code %d); attempt %d of %d in %d s\n' \
      "${0##*/}" "$what" "$rc" $((attempt + 1)) "$attempts" "$delay" >&2
    sleep "$delay"
  done
}
