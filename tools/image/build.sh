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
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=${CLOUDTPU_IMAGE_NAME:-cloudtpu-pod-worker}
suite=bookworm
ca_dir=${CLOUDTPU_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}

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

recipe_hash() {
  {
    cat "$here/build.sh" "$here/packages.txt" "$here/setup-rootfs.sh"
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
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
packages=$(grep -v '^[[:space:]]*\(#\|$\)' "$here/packages.txt" | paste -sd, -)

# Each attempt starts from an empty folder and shows the end of its log when it fails.
bootstrap() {
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; return 1; }
}
log "debootstrap $suite from $mirror (about a minute)"
retry 3 15 "debootstrap" bootstrap

cat > "$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
SOURCES
ca_files | while read -r f; do cp "$f" "$rootfs/usr/local/share/ca-certificates/"; done
cp "$here/setup-rootfs.sh" "$rootfs/tmp/setup-rootfs.sh"
chroot "$rootfs" /bin/sh /tmp/setup-rootfs.sh
rm -f "$rootfs/tmp/setup-rootfs.sh"

log "docker import $name:$tag"
tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'ENV container=docker' \
  - "$name:$tag" >/dev/null
docker tag "$name:$tag" "$name:current"
log "built $name:$tag (also tagged $name:current)"
