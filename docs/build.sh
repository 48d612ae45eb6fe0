#!/usr/bin/env bash
# The collection docs site (make docs): antsibull-docs pages for every plugin, module and role of
# the collection as it ships, plus the guides of docs/docsite/, built by Sphinx into
# .cache/docs/site/build/html. Nothing here is committed or shipped. A docs lint error, an
# antsibull-docs parsing error or a Sphinx warning fails the build (except the references into
# ansible-core's documentation, which need intersphinx; see the end).
#
# Usage: docs/build.sh     (VENV_BIN picks the toolchain; default .venv/bin)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
venv_bin="${VENV_BIN:-$repo/.venv/bin}"
export PATH="${venv_bin}:${PATH}"
out="$repo/.cache/docs"

for tool in ansible-galaxy antsibull-docs sphinx-build; do
  if ! command -v "$tool" >/dev/null; then
    echo "docs: $tool not found in $venv_bin; run 'make setup' first" >&2
    exit 2
  fi
done

# The playbooks' pages are rendered from their specs and committed: a stale one fails the build.
"$venv_bin/python" "$repo/tools/playbook_docs.py" --check

rm -rf "$out"
mkdir -p "$out/dist" "$out/collections"
# The collection as it ships, installed where nothing else of this repository is visible
# (ansible.cfg's collections path would show the whole repository).
printf '[defaults]\ncollections_path = %s\n' "$out/collections" >"$out/ansible.cfg"
export ANSIBLE_CONFIG="$out/ansible.cfg"
export ANSIBLE_NOCOLOR=1
ansible-galaxy collection build "$repo" --output-path "$out/dist" >/dev/null
ansible-galaxy collection install --no-deps -p "$out/collections" "$out"/dist/cloudtpu-pod-*.tar.gz >/dev/null

echo "docs: antsibull-docs lint-collection-docs"
antsibull-docs lint-collection-docs --plugin-docs "$out/collections/ansible_collections/cloudtpu/pod"

mkdir -m 0700 "$out/site"
antsibull-docs sphinx-init --use-current --fail-on-error --no-add-antsibull-docs-version \
  --project cloudtpu.pod --copyright "cloudtpu.pod contributors" --title "cloudtpu.pod" \
  --dest-dir "$out/site" cloudtpu.pod >/dev/null
# No intersphinx: its inventories live on other hosts, and the build must not depend on them.
printf '\n# Built offline by docs/build.sh: no intersphinx inventories.\nintersphinx_mapping = {}\n' \
  >>"$out/site/conf.py"

echo "docs: building the site"
cd "$out/site"
antsibull-docs --config-file antsibull-docs.cfg collection --cleanup everything --fail-on-error \
  --use-current --dest-dir rst cloudtpu.pod >/dev/null
sphinx-build -M html rst build -c . --keep-going -q -w "$out/warnings.log"

# References into ansible-core's own documentation (common return values, action plugins,
# configuration settings and their ANSIBLE_* variables) would resolve through intersphinx;
# without it they stay unresolved. Every other warning or error fails the build.
external="undefined label: '(common_return_values|action_plugins|ansible_configuration_settings)'"
external+="|'envvar' reference target not found: ANSIBLE_[A-Z_]+"
unexpected="$(grep -E 'WARNING|ERROR|CRITICAL' "$out/warnings.log" | grep -vE "$external" || true)"
if [[ -n "$unexpected" ]]; then
  echo "docs: Sphinx warnings:" >&2
  echo "$unexpected" >&2
  exit 1
fi
echo "docs: $(grep -cE "$external" "$out/warnings.log" || true) references to ansible-core's documentation left unresolved (no intersphinx here)"
echo "docs: $out/site/build/html/index.html"
