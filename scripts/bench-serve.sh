#!/usr/bin/env bash
#: Times `tackle serve` against the Node reference MCP server (server-filesystem) with the MCP
#: Python SDK as the client of both (scripts/bench_serve.py): 200 sequential `read` calls of a
#: 20-line file (median) and 50 concurrent (wall), RUNS rounds (default 3), each printing both
#: servers' figures and the ratio tackle / Node. Targets: both ratios <= 0.8.
#:
#: Usage: scripts/bench-serve.sh. Environment: TACKLE_BIN (default: the release binary, built
#: when missing), RUNS.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
python=$("$repo/scripts/install-test-python.sh" | tail -n 1)
entry=$("$repo/scripts/install-reference-server.sh" | tail -n 1)
tackle=${TACKLE_BIN:-$repo/target/release/tackle}
if [[ -z ${TACKLE_BIN:-} ]]; then
    echo "building tackle (release)..." >&2
    (cd "$repo" && cargo build --release --quiet -p tackle-cli)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/data/tmp"
root=$(cd "$work/root" && pwd -P)
for i in $(seq 1 20); do echo "line $i of the file"; done >"$root/small.txt"

TMPDIR="$work/data/tmp" "$python" "$repo/scripts/bench_serve.py" --tackle "$tackle" \
    --node-entry "$entry" --root "$root" --file "$root/small.txt" --data-dir "$work/data" \
    --runs "${RUNS:-3}"
