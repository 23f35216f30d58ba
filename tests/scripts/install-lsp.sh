#!/usr/bin/env bash
# Installs the language server the end-to-end tests of language servers use: pyright, from npm,
# into a cache directory outside the repository (the tests look there). Idempotent: an installed
# pyright of the pinned version is left as it is.
#
# No npm: says what to install and exits 0; the tests that need pyright then skip, naming this
# script. The directory may be moved with AGENTD_TESTS_LSP_DIR.
set -euo pipefail

version=1.1.414
dir=${AGENTD_TESTS_LSP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd-tests/pyright}
bin="$dir/node_modules/.bin/pyright-langserver"

say() {
    printf 'install-lsp: %s\n' "$*" >&2
}

installed_version() {
    node -e 'process.stdout.write(require(process.argv[1]).version)' \
        "$dir/node_modules/pyright/package.json" 2>/dev/null || true
}

if [ -x "$bin" ] && [ "$(installed_version)" = "$version" ]; then
    say "pyright $version is installed in $dir"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    say "npm and node are needed to install pyright (apt-get install nodejs npm); the language server tests will skip"
    exit 0
fi
mkdir -p "$dir"
# A package.json of its own, so that npm installs here and not in a parent project.
[ -f "$dir/package.json" ] || printf '{"private": true}\n' >"$dir/package.json"
(cd "$dir" && npm install --no-audit --no-fund --no-save "pyright@$version" >&2)
if [ ! -x "$bin" ]; then
    say "npm finished but $bin is missing"
    exit 1
fi
say "pyright $version installed in $dir"
