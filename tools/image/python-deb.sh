#!/usr/bin/env bash
# Package a CPython X.Y that pyenv built on this (Debian) machine as Debian packages with their
# files under /usr, in a flat apt repository: pythonX.Y (interpreter, standard library, ensurepip),
# pythonX.Y-venv (names what `pythonX.Y -m venv` needs) and pythonX.Y-dev (headers, config).
# Debian ships one Python per release; this gives the worker image the interpreter real TPU VM
# images have, served the way the deadsnakes PPA serves Ubuntu.
#
# Usage: python-deb.sh X.Y REPO_DIR
#   Exit 0: REPO_DIR holds the .deb files, Packages and Release.
#   Exit 3: pyenv (PYENV_ROOT, else `pyenv root`) has no CPython X.Y; a message says so.
set -euo pipefail

want=${1:?usage: python-deb.sh X.Y REPO_DIR}
repo=${2:?usage: python-deb.sh X.Y REPO_DIR}
log() { printf 'python-deb: %s\n' "$*" >&2; }

pyenv_root=${PYENV_ROOT:-}
if [ -z "$pyenv_root" ] && command -v pyenv >/dev/null 2>&1; then
  pyenv_root=$(pyenv root)
fi
src=""
if [ -n "$pyenv_root" ] && [ -d "$pyenv_root/versions" ]; then
  src=$(find "$pyenv_root/versions" -mindepth 1 -maxdepth 1 -name "$want.*" \
    -exec test -x '{}/bin/python'"$want" ';' -print | LC_ALL=C sort -V | tail -n 1)
fi
if [ -z "$src" ]; then
  log "no CPython $want under pyenv (PYENV_ROOT or 'pyenv root': '${pyenv_root:-not found}')"
  exit 3
fi

full=$("$src/bin/python$want" -c 'import platform; print(platform.python_version())')
arch=$(dpkg --print-architecture)
triplet=$("$src/bin/python$want" -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH"))')
debver="$full-0cloudtpu1"
libdir="usr/lib/$triplet"
log "packaging CPython $full ($src) as python$want $debver"

work=$(mktemp -d /var/tmp/cloudtpu-pydeb.XXXXXX)
trap 'rm -rf "$work"' EXIT
main="$work/python$want"
dev="$work/python$want-dev"
venv="$work/python$want-venv"
mkdir -p "$main/usr/bin" "$main/$libdir" "$dev/usr/bin" "$dev/usr/include" "$dev/$libdir" \
  "$venv/usr/share/doc/python$want-venv"

# The standard library without its tests, caches and the build machine's site-packages.
tar -C "$src/lib" \
  --exclude="python$want/test" --exclude="python$want/*/test" --exclude="python$want/*/tests" \
  --exclude="python$want/idlelib" --exclude="python$want/tkinter" \
  --exclude="python$want/turtledemo" --exclude="python$want/lib-dynload/_tkinter*" \
  --exclude="__pycache__" \
  --exclude="python$want/site-packages" --exclude="python$want/config-*" \
  -cf - "python$want" | tar -C "$main/usr/lib" -xf -
install -d -m 0755 "$main/usr/lib/python$want/site-packages"
mkdir -p "$dev/usr/lib/python$want"
cp -a "$src/lib/python$want/"config-* "$dev/usr/lib/python$want/"
cp -a "$src/bin/python$want" "$main/usr/bin/"
cp -a "$src/lib/libpython$want.so.1.0" "$main/$libdir/"
cp -a "$src/include/python$want" "$dev/usr/include/"
ln -s "libpython$want.so.1.0" "$dev/$libdir/libpython$want.so"
cp -a "$src/bin/python$want-config" "$dev/usr/bin/"
if [ -d "$src/lib/pkgconfig" ]; then
  mkdir -p "$dev/$libdir/pkgconfig"
  cp -a "$src/lib/pkgconfig/python-$want"*.pc "$dev/$libdir/pkgconfig/" 2>/dev/null || true
fi

# pyenv's prefix becomes /usr: in the build configuration texts, and in the ELF run paths
# (rewritten in place, the new path padded with NUL bytes: a shorter string fits).
"$src/bin/python$want" - "$src" "/$libdir" "$main" "$dev" <<'PY'
import pathlib, sys

prefix, new_lib, *roots = sys.argv[1:]
old = (prefix + "/lib").encode()
new = new_lib.encode()
assert len(new) <= len(old), (new, old)
for root in roots:
    for path in pathlib.Path(root).rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if prefix.encode() not in data:
            continue
        if data[:4] == b"\x7fELF":
            data = data.replace(old + b"\0", new + b"\0" * (len(old) - len(new) + 1))
        elif b"\0" not in data:
            data = data.replace(prefix.encode(), b"/usr")
        path.write_bytes(data)
PY

# pip as the distributions ship it in pythonX.Y-venv: its certifi answers the system's CA bundle
# (/etc/ssl/certs, which update-ca-certificates keeps), not the copy inside the wheel, so pip in a
# new venv trusts what the host trusts (an inspecting proxy's CA included).
"$src/bin/python$want" - "$main/usr/lib/python$want/ensurepip/_bundled" <<'PY'
import base64, hashlib, pathlib, sys, zipfile

CORE = b'''"""The system's CA bundle (kept by update-ca-certificates), as distributions ship pip."""

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def where() -> str:
    return SYSTEM_BUNDLE


def contents() -> str:
    with open(SYSTEM_BUNDLE, encoding="ascii") as bundle:
        return bundle.read()
'''
TARGET = "pip/_vendor/certifi/core.py"
digest = base64.urlsafe_b64encode(hashlib.sha256(CORE).digest()).rstrip(b"=").decode()
for wheel in pathlib.Path(sys.argv[1]).glob("pip-*.whl"):
    patched = wheel.with_suffix(".patched")
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(patched, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == TARGET:
                data = CORE
            elif info.filename.endswith(".dist-info/RECORD"):
                lines = [
                    f"{TARGET},sha256={digest},{len(CORE)}" if line.startswith(TARGET + ",") else line
                    for line in data.decode().splitlines()
                ]
                data = ("\n".join(lines) + "\n").encode()
            new.writestr(info, data)
    patched.replace(wheel)
    print(f"python-deb: {wheel.name}: pip trusts the system's CA bundle", file=sys.stderr)
PY

# Byte-code compiled now, with the paths it will have on the worker.
"$src/bin/python$want" -m compileall -q -j 0 -d "/usr/lib/python$want" \
  -x '/(lib2to3/tests|ensurepip/_bundled)/' "$main/usr/lib/python$want" >/dev/null || true

# Runtime dependencies: the Debian packages that own the libraries the binaries load.
depends=$(
  find "$main" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/usr/bin/*' \) -print0 \
    | LD_LIBRARY_PATH="$main/$libdir" xargs -0 ldd 2>/dev/null \
    | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
    | while read -r lib; do
        dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null \
          || dpkg -S "${lib#/usr}" 2>/dev/null || true
      done \
    | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g'
)
log "python$want depends on: ${depends:-nothing found}"

control() { # package dir, name, description, depends
  mkdir -p "$1/DEBIAN"
  cat > "$1/DEBIAN/control" <<CONTROL
Package: $2
Version: $debver
Architecture: $arch
Maintainer: cloudtpu.pod maintainers <cloudtpu-pod@localhost>
Installed-Size: $(du -sk "$1" | cut -f1)
Depends: $4
Section: python
Priority: optional
Description: $3
 CPython $full packaged for the cloudtpu.pod test worker image (files under /usr).
CONTROL
}
control "$main" "python$want" "Python $want interpreter and standard library" "${depends:-libc6}"
printf 'activate-noawait ldconfig\n' > "$main/DEBIAN/triggers"
control "$dev" "python$want-dev" "Python $want headers and build configuration" \
  "python$want (= $debver)"
printf 'The venv module and ensurepip are part of the python%s package.\n' "$want" \
  > "$venv/usr/share/doc/python$want-venv/README"
control "$venv" "python$want-venv" "Python $want venv module (in python$want)" \
  "python$want (= $debver)"

mkdir -p "$repo"
rm -f "$repo"/*.deb "$repo/Packages" "$repo/Release"
for pkg in "$main" "$dev" "$venv"; do
  dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$repo/$(basename "$pkg")_${debver}_$arch.deb" >/dev/null
done

# A flat repository: Packages and Release next to the .deb files ("deb [trusted=yes] file:DIR ./").
(
  cd "$repo"
  for deb in *.deb; do
    dpkg-deb -f "$deb"
    printf 'Filename: ./%s\nSize: %s\nMD5sum: %s\nSHA256: %s\n\n' "$deb" "$(stat -c %s "$deb")" \
      "$(md5sum "$deb" | cut -d' ' -f1)" "$(sha256sum "$deb" | cut -d' ' -f1)"
  done > Packages
  {
    printf 'Origin: cloudtpu.pod\nLabel: cloudtpu.pod python%s\nArchitectures: %s\n' "$want" "$arch"
    printf 'Date: %s\nSHA256:\n' "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
    printf ' %s %s Packages\n' "$(sha256sum Packages | cut -d' ' -f1)" "$(stat -c %s Packages)"
  } > Release
)
chmod -R u=rwX,go=rX "$repo"
log "repository in $repo: $(cd "$repo" && ls -- *.deb | paste -sd' ' -)"
