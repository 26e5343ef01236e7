#!/usr/bin/env bash
#: Installs the official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned)
#: into a cache directory, for crates/tackle-cli/tests/conformance.rs. Running it again with the
#: suite present does nothing. The last line on stdout is the directory holding its `conformance`
#: command (set it as TACKLE_CONFORMANCE).
set -euo pipefail

cache="${TACKLE_CONFORMANCE_CACHE:-$HOME/.cache/tackle-ci/conformance}"
# 0.1.14 and later need Node 22 (`fs.globSync`); CI machines have Node 20.
version=0.1.13

dir="$cache/$version"
if [[ ! -x "$dir/node_modules/.bin/conformance" ]]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$version" >&2
fi
echo "$dir/node_modules/.bin"
