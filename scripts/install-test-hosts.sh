#!/usr/bin/env bash
#: Installs the MCP hosts the real-host tests drive (Claude Code, codex), into a cache directory.
#:
#: Both come from npm at pinned versions. Claude Code is the native binary of
#: @anthropic-ai/claude-code-linux-x64 (the @anthropic-ai/claude-code wrapper wants Node 22; CI
#: machines have Node 20). codex's native binary comes in the platform package @openai/codex
#: installs as an optional dependency. Running it again with everything present does nothing.
#: The last line on stdout is the directory holding `claude` and `codex`.
set -euo pipefail

cache="${TACKLE_HOST_CACHE:-$HOME/.cache/tackle-ci/hosts}"
claude_version=2.1.332
codex_version=0.169.0

bin="$cache/bin"
mkdir -p "$bin"

# shellcheck source=scripts/npm-cache.sh
source "$(dirname "$0")/npm-cache.sh"

# The one executable named `name` under `dir` (the packages' layouts differ between versions).
native() { # dir, name
  local found
  found="$(find "$1" -type f -name "$2" -perm -u+x | head -n 1)"
  [[ -n "$found" ]] || { echo "no executable $2 under $1" >&2; exit 1; }
  echo "$found"
}

npm_pkg claude "@anthropic-ai/claude-code-linux-x64@$claude_version"
ln -sf "$(native "$cache/claude/node_modules/@anthropic-ai/claude-code-linux-x64" claude)" "$bin/claude"

npm_pkg codex "@openai/codex@$codex_version"
ln -sf "$(native "$cache/codex/node_modules/@openai" codex)" "$bin/codex"

echo "$bin"
