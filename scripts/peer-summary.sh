#!/usr/bin/env bash
#: Sums up target/tmp/peers.log, which the tests append to: how many tests ran against real
#: peers (the MCP Python SDK, language servers, MCP hosts, the conformance suite) and how many
#: were skipped, with each skip's reason. Run it after `cargo test --workspace`.
set -euo pipefail
log="${1:-$(dirname "$0")/../target/tmp/peers.log}"
if [[ ! -s "$log" ]]; then
  echo "no test asked for a real peer (no $log)"
  exit 0
fi
ran=$(grep -c '^ran' "$log" || true)
skipped=$(grep -c '^skipped' "$log" || true)
echo "tests against real peers: $ran ran, $skipped skipped"
awk -F'\t' '$1 == "ran" { n[$2]++ } END { for (p in n) printf "  ran against %s: %d\n", p, n[p] }' "$log" | sort
awk -F'\t' '$1 == "skipped" { printf "  skipped %s (%s): %s\n", $3, $2, $4 }' "$log"
