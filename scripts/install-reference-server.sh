#!/usr/bin/env bash
#: Installs the reference MCP server the serve benchmarks compare against, the Node
#: `@modelcontextprotocol/server-filesystem` (pinned), into a cache directory. Running it again
#: with the package in place does nothing. The last line on stdout is the server's entry script
#: (run it as `node ENTRY ROOT`).
set -euo pipefail

cache="${TACKLE_SERVER_CACHE:-$HOME/.cache/tackle-ci/servers}"
filesystem_version=2026.8.31

# shellcheck source=scripts/npm-cache.sh
source "$(dirname "$0")/npm-cache.sh"

npm_pkg filesystem "@modelcontextprotocol/server-filesystem@$filesystem_version"
entry="$cache/filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
[[ -f "$entry" ]] || { echo "no entry script at $entry" >&2; exit 1; }
echo "$entry"
