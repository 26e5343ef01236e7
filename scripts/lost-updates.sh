#!/usr/bin/env bash
# Counts lost updates: 64 `tackle call edit` processes, each in its own session after its own
# read, each changing a different line of one file, repeated RUNS times (default 9).
#
# Usage: scripts/lost-updates.sh [TACKLE_BIN]   (default: target/release/tackle)
# Prints, per run and in total, the edits reported done and how many of them are in the file.
set -euo pipefail

bin=${1:-target/release/tackle}
runs=${RUNS:-9}
bin=$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/data"
export TACKLE_DATA_DIR="$work/data"

reported_total=0
present_total=0
for run in $(seq "$runs"); do
    seq 0 63 | sed 's/^/line /' >"$work/root/f.txt"
    for i in $(seq 0 63); do
        "$bin" --root "$work/root" --session "r$run-s$i" call read '{"filePath":"f.txt"}' >/dev/null &
    done
    wait
    for i in $(seq 0 63); do
        (
            out=$("$bin" --root "$work/root" --session "r$run-s$i" call edit \
                "{\"filePath\":\"f.txt\",\"oldString\":\"line $i\n\",\"newString\":\"LINE $i\n\"}" --yes || true)
            [[ $out == Edited* ]] && echo "$i" >>"$work/ok-$run"
        ) &
    done
    wait
    reported=$( [[ -f $work/ok-$run ]] && wc -l <"$work/ok-$run" || echo 0)
    present=0
    if [[ -f $work/ok-$run ]]; then
        while read -r i; do
            grep -qx "LINE $i" "$work/root/f.txt" && present=$((present + 1))
        done <"$work/ok-$run"
    fi
    echo "run $run: $reported edits reported done, $present of them in the file"
    reported_total=$((reported_total + reported))
    present_total=$((present_total + present))
done
echo "total: $reported_total reported done, $present_total in the file, $((reported_total - present_total)) lost"
