#!/usr/bin/env bash
# ansible-test sanity on the whole collection as it ships: the tarball `ansible-galaxy collection
# build` makes (plugins, roles with their files and scripts, playbooks, meta, docs), unpacked
# into a temporary ansible_collections/cloudtpu/pod/ (ansible-test needs that layout as a real
# path) with the committed ignore files of tests/sanity/ next to it. Shell scripts in the
# repository are checked with shellcheck when it is installed.
#
# Every sanity test runs, on the Python of the toolchain (VENV_BIN, default .venv/bin; make
# test-next passes .venv-next/bin). ansible-test installs each test's pinned requirements (pylint,
# pycodestyle, voluptuous, yamllint, ...) into its own virtual environment, so this needs pip to
# reach a package index (the one pip is configured with). SANITY_SKIP="pylint pep8" skips tests by
# name, for machines without one.
#
# tests/sanity/ignore-<ansible-core X.Y>.txt lists what is accepted, one reason per line. The
# only entries: validate-modules wants a GPLv3 header in every module and plugin with
# DOCUMENTATION (ansible-core's own rule); this collection is Apache-2.0 (LICENSE, galaxy.yml).
# A core with no ignore file of its own uses the newest one there is.
#
# Usage: tools/sanity.sh [extra ansible-test arguments]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
venv_bin="${VENV_BIN:-$repo/.venv/bin}"
python="${venv_bin}/python"
ansible_test="${venv_bin}/ansible-test"
export PATH="${venv_bin}:${PATH}"

for tool in "$python" "$ansible_test"; do
  if [[ ! -x "$tool" ]]; then
    echo "sanity: $tool not found; run 'make setup' first" >&2
    exit 2
  fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/cloudtpu-sanity.XXXXXX")"
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/cloudtpu/pod"
mkdir -p "$dest"

# The collection as it ships: build the tarball and unpack it.
"$venv_bin/ansible-galaxy" collection build "$repo" --output-path "$work/build" >/dev/null
tar -xzf "$work"/build/cloudtpu-pod-*.tar.gz -C "$dest"
rm -f "$dest/MANIFEST.json" "$dest/FILES.json"
cp -a "$repo/galaxy.yml" "$dest/galaxy.yml"

py_version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
ansible_minor="$("$python" -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')"
mkdir -p "$dest/tests/sanity"
ignore="$repo/tests/sanity/ignore-${ansible_minor}.txt"
if [[ ! -f "$ignore" ]]; then
  ignore=""
  if [[ -d "$repo/tests/sanity" ]]; then
    ignore="$(find "$repo/tests/sanity" -name 'ignore-*.txt' | sort -V | tail -n 1)"
  fi
fi
if [[ -n "$ignore" ]]; then
  cp "$ignore" "$dest/tests/sanity/ignore-${ansible_minor}.txt"
fi

# ansible-test installs each test's pinned requirements into its own virtual environment and
# bootstraps pip there with a script it downloads from its CI file host. That host may be out of
# reach (offline mirrors, proxies), so provide the bootstrap script ourselves: it uses Python's
# bundled ensurepip and then pip's configured index. ansible-test documents this cache path
# for manual downloads. HOME points at a cache folder of the repository, which keeps the
# user's ~/.ansible untouched and lets later runs reuse the test environments.
export HOME="$repo/.cache/ansible-test-home"
pip_version="$("$python" -c 'import sys; from ansible_test._internal.python_requirements import get_venv_packages as g; from types import SimpleNamespace as n; print(g(n(version=sys.argv[1]))["pip"])' "$py_version")"
bootstrap="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$bootstrap")"
cat >"$bootstrap" <<'EOF'
"""pip bootstrap for ansible-test environments: ensurepip, then pip from the configured index."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install", *args])
EOF

skip=()
for test in ${SANITY_SKIP:-}; do
  skip+=(--skip-test "$test")
done

# Every shell script of the repository (found by its #! line), shipped or not, goes through
# the shellcheck linter (warnings and errors; -x follows the scripts they source).
# Debian's shellcheck package is installed when missing and this runs as root with apt.
if ! command -v shellcheck >/dev/null && [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "sanity: installing Debian's shellcheck package"
  apt-get install -y -q shellcheck >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q shellcheck >/dev/null 2>&1; } || true
fi
if command -v shellcheck >/dev/null; then
  mapfile -t scripts < <(cd "$repo" && git ls-files -co --exclude-standard |
    while read -r file; do
      [[ -f "$file" && "$file" != *.j2 ]] && head -n 1 "$file" | grep -qE '^#!(/usr/bin/env |/bin/)(ba)?sh' && echo "$file"
    done)
  echo "sanity: shellcheck on ${#scripts[@]} shell scripts"
  (cd "$repo" && shellcheck -x --severity=warning "${scripts[@]}")
else
  echo "sanity: shellcheck is not installed and could not be (apt-get install shellcheck);" \
    "the shell scripts were NOT checked"
fi

cd "$dest"
echo "sanity: running ansible-test sanity in $dest"
"$ansible_test" sanity --python "$py_version" --color no --requirements "${skip[@]}" "$@"
