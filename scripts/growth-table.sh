#!/usr/bin/env bash
# Prints the growth table of `cargo bench -p tackle-builtins --bench growth` from criterion's
# saved estimates: for each tool, the time per call at 1x, 10x and 100x its input and the ratio
# of each to the 1x time. Linear growth reads 10 and 100; flat reads 1.
#
# Usage: scripts/growth-table.sh [--run]   (--run runs the bench first)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
if [[ ${1:-} == --run ]]; then
    (cd "$repo" && cargo bench -p tackle-builtins --bench growth)
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--run]" >&2
    exit 2
fi
criterion=$repo/target/criterion
[[ -d $criterion ]] || { echo "error: no results in $criterion; run with --run" >&2; exit 1; }

python3 - "$criterion" <<'PY'
import json, pathlib, sys

root = pathlib.Path(sys.argv[1])
rows = [("read", "lines"), ("read_tail", "lines"), ("edit", "lines"), ("grep", "files"), ("glob", "files")]


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


print("| tool | input (1× / 10× / 100×) | time per call | ratio to 1× |")
print("|---|---|---|---|")
for group, unit in rows:
    sizes = []
    for path in (root / group).glob("*/new/estimates.json"):
        size = path.parent.parent.name
        if size.isdigit():
            estimate = json.loads(path.read_text())["median"]["point_estimate"]
            sizes.append((int(size), estimate))
    if not sizes:
        continue
    sizes.sort()
    base = sizes[0][1]
    print(
        f"| `{group}` | {' / '.join(f'{s:,} {unit}' for s, _ in sizes)} "
        f"| {' / '.join(fmt(t) for _, t in sizes)} "
        f"| {' / '.join(f'{t / base:.1f}' for _, t in sizes)} |"
    )
PY
