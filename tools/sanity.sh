#!/usr/bin/env bash
# ansible-test sanity on the collection's plugins (all of plugins/, plus meta/ and galaxy.yml).
#
# ansible-test insists on running from .../ansible_collections/<namespace>/<name>/ as a real
# path; the repository's collections/ symlink resolves back to the repository root, so this
# script copies the collection files into a temporary tree of that shape and runs there.
# The google.cloud collection (bundled in the ansible pip package) is copied next to it, because
# plugins/module_utils/tpu_api.py imports its GcpSession and the import test must resolve it.
#
# Every sanity test runs. ansible-test installs each test's pinned requirements (pylint,
# pycodestyle, voluptuous, yamllint, ...) into its own virtual environment, so this needs pip to
# reach a package index (the one pip is configured with). SANITY_SKIP="pylint pep8" skips tests by
# name, for machines without one.
#
# License headers: validate-modules wants a GPLv3 header in every plugin (ansible-core's own
# rule). This collection's license is the one in galaxy.yml; when that is not a GPL, the
# generated ignore file lists missing-gplv3-license for each plugin and nothing else.
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

# The collection files ansible-test looks at.
cp -a "$repo/plugins" "$dest/plugins"
mkdir -p "$dest/meta"
cp -a "$repo/meta/runtime.yml" "$dest/meta/runtime.yml"
cp -a "$repo/galaxy.yml" "$dest/galaxy.yml"
if [[ -d "$repo/tests/sanity" ]]; then
  mkdir -p "$dest/tests"
  cp -a "$repo/tests/sanity" "$dest/tests/sanity"
fi
find "$dest" -name __pycache__ -type d -prune -exec rm -rf {} +

# Dependency: google.cloud, from the Python environment that runs Ansible.
gcp_src="$("$python" -c 'import importlib.util as u; s = u.find_spec("ansible_collections.google.cloud"); print(next(iter(s.submodule_search_locations)) if s else "")' 2>/dev/null || true)"
if [[ -z "$gcp_src" || ! -d "$gcp_src/plugins/module_utils" ]]; then
  echo "sanity: the google.cloud collection was not found in $python's environment" >&2
  exit 2
fi
mkdir -p "$work/ansible_collections/google"
cp -a "$gcp_src" "$work/ansible_collections/google/cloud"

# ansible-test installs each test's pinned requirements into its own virtual environment and
# bootstraps pip there with a script it downloads from its CI file host. That host may be out of
# reach (offline mirrors, proxies), so provide the bootstrap script ourselves: it uses Python's
# bundled ensurepip and then pip's configured index. ansible-test documents this cache path
# for manual downloads. HOME points at a cache folder of the repository, which keeps the
# user's ~/.ansible untouched and lets later runs reuse the test environments.
export HOME="$repo/.cache/ansible-test-home"
pip_version="$("$python" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g; from types import SimpleNamespace as n; print(g(n(version="3.11"))["pip"])')"
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

ansible_minor="$("$python" -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')"
ignore="$dest/tests/sanity/ignore-${ansible_minor}.txt"
if ! grep -qiE '^\s*-\s*GPL' "$repo/galaxy.yml"; then
  mkdir -p "$(dirname "$ignore")"
  # validate-modules checks headers of modules and of single-plugin files that carry
  # DOCUMENTATION (inventory, lookup, ...; not filter/test files); list those whose first 20
  # lines do not already name the GPL
  (cd "$dest" && find plugins -name '*.py' ! -path 'plugins/module_utils/*' ! -path 'plugins/doc_fragments/*' \
    ! -path 'plugins/filter/*' ! -path 'plugins/test/*' | sort) |
    while read -r file; do
      if grep -q '^DOCUMENTATION' "$dest/$file" && ! head -n 20 "$dest/$file" | grep -q 'GNU General Public License'; then
        echo "$file validate-modules:missing-gplv3-license # collection license: see galaxy.yml"
      fi
    done >>"$ignore"
fi

cd "$dest"
echo "sanity: running ansible-test sanity in $dest"
"$ansible_test" sanity --python 3.11 --color no --requirements "${skip[@]}" "$@"
