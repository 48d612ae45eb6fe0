#!/usr/bin/env bash
# Build the Debian bookworm worker image used by molecule and the emulator's Docker
# backend: debootstrap a root file system, run setup-rootfs.sh inside it, `docker import`.
#
# The tag is a hash of the recipe (this folder and the host's extra CA certificates);
# when that tag exists nothing is built. `IMAGE_NAME:current` always points at the newest.
#
# Environment:
#   CLOUDTPU_IMAGE_NAME     image name (default cloudtpu-pod-worker)
#   CLOUDTPU_DEBIAN_MIRROR  Debian mirror (default: the first one in the host's apt sources)
#   CLOUDTPU_EXTRA_CA_DIR   extra CA certificates to trust (default /usr/local/share/ca-certificates)
#   CLOUDTPU_IMAGE_PYTHON   extra Python for the image's local apt repository (default 3.10, the
#                           one real TPU VM images have; "none" for no repository); made from
#                           pyenv's build of it (PYENV_ROOT or `pyenv root`) by python-deb.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=${CLOUDTPU_IMAGE_NAME:-cloudtpu-pod-worker}
suite=bookworm
ca_dir=${CLOUDTPU_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}
extra_python=${CLOUDTPU_IMAGE_PYTHON:-3.10}
python_repo=/opt/cloudtpu/apt

log() { printf 'image: %s\n' "$*" >&2; }
# shellcheck source=tools/lib/retry.sh
. "$here/../lib/retry.sh"

host_mirror() {
  local uri=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $0 ~ / (bookworm|stable) / {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
  fi
  printf '%s' "$uri"
}

ca_files() {
  if [ -d "$ca_dir" ]; then
    find "$ca_dir" -maxdepth 2 -name '*.crt' -type f | LC_ALL=C sort
  fi
}

# The pyenv build that python-deb.sh would package, or "none".
extra_python_build() {
  local root=${PYENV_ROOT:-}
  if [ -z "$root" ] && command -v pyenv >/dev/null 2>&1; then root=$(pyenv root); fi
  if [ "$extra_python" = none ] || [ -z "$root" ]; then echo none; return; fi
  find "$root/versions" -mindepth 1 -maxdepth 1 -name "$extra_python.*" 2>/dev/null \
    | LC_ALL=C sort -V | tail -n 1 | xargs -r basename || echo none
}

recipe_hash() {
  {
    cat "$here/build.sh" "$here/packages.txt" "$here/setup-rootfs.sh" "$here/python-deb.sh" \
      "$here/../payload_cache.py"
    echo "python: $(extra_python_build)"
    ca_files | while read -r f; do cat "$f"; done
  } | sha256sum | cut -c1-12
}

tag=$(recipe_hash)
if docker image inspect "$name:$tag" >/dev/null 2>&1; then
  docker tag "$name:$tag" "$name:current"
  log "$name:$tag exists; nothing to build"
  exit 0
fi

mirror=${CLOUDTPU_DEBIAN_MIRROR:-$(host_mirror)}
if [ -z "$mirror" ]; then
  log "no Debian mirror found in the host's apt sources; set CLOUDTPU_DEBIAN_MIRROR"
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  install_debootstrap() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  retry 3 15 "installing debootstrap" install_debootstrap
fi

work=$(mktemp -d /var/tmp/cloudtpu-image.XXXXXX)
python_pid=""
trap '[ -z "$python_pid" ] || kill "$python_pid" 2>/dev/null; rm -rf "$work"' EXIT
rootfs="$work/rootfs"
packages=$(grep -v '^[[:space:]]*\(#\|$\)' "$here/packages.txt" | paste -sd, -)

# Each attempt starts from an empty folder and shows the end of its log when it fails.
bootstrap() {
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; return 1; }
}
# The extra Python's packages are made while debootstrap runs.
if [ "$extra_python" != none ]; then
  "$here/python-deb.sh" "$extra_python" "$work/python-repo" 2>"$work/python-deb.log" &
  python_pid=$!
fi
log "debootstrap $suite from $mirror (about a minute)"
retry 3 15 "debootstrap" bootstrap

cat > "$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
SOURCES
ca_files | while read -r f; do cp "$f" "$rootfs/usr/local/share/ca-certificates/"; done
if [ -n "$python_pid" ]; then
  python_rc=0
  wait "$python_pid" || python_rc=$?
  python_pid=""
  cat "$work/python-deb.log" >&2
  if [ "$python_rc" -eq 0 ]; then
    mkdir -p "$rootfs$python_repo"
    cp -a "$work/python-repo/." "$rootfs$python_repo/"
    printf 'deb [trusted=yes] file:%s ./\n' "$python_repo" \
      > "$rootfs/etc/apt/sources.list.d/cloudtpu-python.list"
    log "python$extra_python packages in the image's apt source file:$python_repo"
  elif [ "$python_rc" -eq 3 ]; then
    log "WARNING: no CPython $extra_python to package: this image offers only Debian's python3.11."
    log "WARNING: molecule and make demo use Python 3.10 on it; run them with"
    log "WARNING: CLOUDTPU_TEST_PYTHON=3.11 (or install pyenv's $extra_python and build again)"
  else
    log "packaging python$extra_python failed (exit $python_rc)"
    exit 1
  fi
fi
cp "$here/setup-rootfs.sh" "$rootfs/tmp/setup-rootfs.sh"
chroot "$rootfs" /bin/sh /tmp/setup-rootfs.sh
rm -f "$rootfs/tmp/setup-rootfs.sh"
# Ansible's module payloads keep their compiled code between tasks (tools/payload_cache.py says why).
install -m 0644 "$here/../payload_cache.py" "$rootfs/usr/lib/python3/dist-packages/cloudtpu_payload_cache.py"
echo "import cloudtpu_payload_cache" > "$rootfs/usr/lib/python3/dist-packages/cloudtpu-payload-cache.pth"

log "docker import $name:$tag"
tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'ENV container=docker' \
  - "$name:$tag" >/dev/null
docker tag "$name:$tag" "$name:current"
log "built $name:$tag (also tagged $name:current)"
