#!/usr/bin/env bash
#: Creates the Python virtual environment the tests run the MCP Python SDK from (`mcp`, pinned),
#: in a cache directory, so nothing is installed into the system's Python (which Debian and
#: Ubuntu refuse: PEP 668). Running it again with the environment in place does nothing. The last
#: line on stdout is the environment's `python`.
set -euo pipefail

cache="${TACKLE_PYTHON_CACHE:-$HOME/.cache/tackle-ci/python}"
mcp_version=2.3.0

venv="$cache/mcp-$mcp_version"
if [[ ! -f "$venv/.installed" ]]; then
  rm -rf "$venv"
  mkdir -p "$cache"
  if ! python3 -m venv "$venv" >&2; then
    echo "python3 cannot create a virtual environment: install its venv module (Debian and Ubuntu: apt install python3-venv)" >&2
    exit 1
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$mcp_version" >&2
  touch "$venv/.installed"
fi
echo "$venv/bin/python"
