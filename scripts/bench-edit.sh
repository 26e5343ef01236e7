#!/usr/bin/env bash
# Times whole `tackle call` processes for the large edit cases, against a `tackle call read` of
# the same file in the same run (process start, journal and read of the file: the floor).
#
# Usage: scripts/bench-edit.sh [TACKLE_BIN]   (default: target/release/tackle)
# Environment: RUNS (default 9) timed runs of each case.
#
# Cases, each on a fresh copy of its file after a `call read` in the same session:
#   read_20k        `read` of the 20,000-line file (the reference)
#   replace_all_20k `edit` with replaceAll of a token on every line (20,000 replacements)
#   write_20k_50k   `write` of 50,000 new lines over the 20,000-line file
#
# Prints the median wall time of each case in milliseconds and its ratio to read_20k.
set -euo pipefail

bin=${1:-target/release/tackle}
runs=${RUNS:-9}
[[ -x $bin ]] || { echo "error: $bin is not an executable (cargo build --release -p tackle-cli)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/data"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
with open(f"{work}/big.txt", "w") as f:
    f.writelines(f"let item_{i} = value;\n" for i in range(20_000))
with open(f"{work}/write.json", "w") as f:
    json.dump({"filePath": "big.txt", "content": "".join(f"fresh line {i}\n" for i in range(50_000))}, f)
with open(f"{work}/edit.json", "w") as f:
    json.dump({"filePath": "big.txt", "oldString": "value;", "newString": "other;", "replaceAll": True}, f)
with open(f"{work}/read.json", "w") as f:
    json.dump({"filePath": "big.txt", "limit": 2000}, f)
PY

tackle() {
    TACKLE_DATA_DIR="$work/data" "$bin" --root "$work/root" --session bench call "$@" --yes >/dev/null
}

# One timed run: reset the file, read it, then time the case's call.
run_case() {
    local args=$1
    local tool=$2
    cp "$work/big.txt" "$work/root/big.txt"
    tackle read - <"$work/read.json"
    local start end
    start=$(date +%s%N)
    tackle "$tool" - <"$work/$args"
    end=$(date +%s%N)
    echo $(((end - start) / 1000))
}

median() { sort -n | awk '{a[NR]=$1} END {m=int((NR+1)/2); printf "%.1f", a[m]/1000}'; }

declare -A times
for name in read_20k replace_all_20k write_20k_50k; do times[$name]=""; done
run_case read.json read >/dev/null   # warm-up
for _ in $(seq "$runs"); do
    times[read_20k]+="$(run_case read.json read) "
    times[replace_all_20k]+="$(run_case edit.json edit) "
    times[write_20k_50k]+="$(run_case write.json write) "
done
ref=$(tr ' ' '\n' <<<"${times[read_20k]}" | grep . | median)
printf '%-16s %10s %8s\n' case median_ms ratio
for name in read_20k replace_all_20k write_20k_50k; do
    m=$(tr ' ' '\n' <<<"${times[$name]}" | grep . | median)
    printf '%-16s %10s %8s\n' "$name" "$m" "$(awk -v a="$m" -v b="$ref" 'BEGIN{printf "%.2f", a/b}')"
done
