#!/usr/bin/env bash
# Times tackle's grep and glob tools against ripgrep on one directory tree.
#
# Usage: scripts/bench-search.sh DIR [PATTERN] [GLOB]
#   DIR      the tree to search (the Location root of tackle)
#   PATTERN  the regex for grep (default: fn\s+main)
#   GLOB     the glob for glob (default: *.html)
# Environment: RUNS (default 7) timed runs of each command, alternating tackle and rg after one
# warm-up run of each; TOOLS (default "grep glob") selects which comparisons to run.
#
# Prints the median wall time of each command and the ratio tackle/rg.
set -euo pipefail

usage() {
    echo "usage: $0 DIR [PATTERN] [GLOB]" >&2
    exit 2
}

[[ $# -ge 1 && $# -le 3 ]] || usage
dir=$1
pattern=${2:-'fn\s+main'}
glob=${3:-'*.html'}
runs=${RUNS:-7}
tools=${TOOLS:-grep glob}

[[ -d $dir ]] || { echo "error: $dir is not a directory" >&2; exit 2; }
dir=$(cd "$dir" && pwd -P)

rg=$(command -v rg || true)
if [[ -z $rg && -x $HOME/.cargo/bin/rg ]]; then
    rg=$HOME/.cargo/bin/rg
fi
if [[ -z $rg ]]; then
    echo "error: ripgrep (rg) is not installed; install it with: cargo install ripgrep" >&2
    exit 1
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
echo "building tackle (release)..." >&2
(cd "$repo" && cargo build --release --quiet -p tackle-cli)
tackle=$repo/target/release/tackle
[[ -x $tackle ]] || { echo "error: $tackle was not built" >&2; exit 1; }

data_dir=$(mktemp -d)
trap 'rm -rf "$data_dir"' EXIT

# A string as a JSON string literal (backslashes and quotes escaped).
json_string() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

# Wall time of one run of "$@" in milliseconds (output discarded, exit status ignored: rg exits 1
# when nothing matches).
time_ms() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}

median() {
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# compare LABEL TACKLE_ARGS_JSON TOOL -- RG_ARGS...
compare() {
    local tool=$1 args=$2
    shift 3
    local tackle_cmd=("$tackle" --root "$dir" --data-dir "$data_dir" call --yes "$tool" "$args")
    local rg_cmd=("$rg" "$@")

    # Warm the cache, and make sure the tool works before timing it.
    local out status=0
    out=$("${tackle_cmd[@]}" 2>&1) || status=$?
    if [[ $status -ne 0 ]]; then
        echo "error: tackle $tool failed (exit $status):" >&2
        printf '%s\n' "$out" | head -20 >&2
        exit 1
    fi
    "${rg_cmd[@]}" >/dev/null 2>&1 || true

    local t_times=() r_times=() i
    for ((i = 0; i < runs; i++)); do
        t_times+=("$(time_ms "${tackle_cmd[@]}")")
        r_times+=("$(time_ms "${rg_cmd[@]}")")
    done
    local t r
    t=$(median "${t_times[@]}")
    r=$(median "${r_times[@]}")
    printf '%-5s tackle %8s ms   rg %8s ms   tackle/rg %s   (median of %d; tackle runs: %s; rg runs: %s)\n' \
        "$tool" "$t" "$r" "$(awk -v t="$t" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", t / r; else print "n/a" }')" \
        "$runs" "${t_times[*]}" "${r_times[*]}"
}

echo "tree: $dir" >&2
echo "tackle: $tackle; rg: $rg ($("$rg" --version | head -1))" >&2
for tool in $tools; do
    case $tool in
    grep)
        compare grep "{\"pattern\": $(json_string "$pattern")}" -- \
            -nH --hidden --follow -e "$pattern" "$dir"
        ;;
    glob)
        compare glob "{\"pattern\": $(json_string "$glob")}" -- \
            --files --hidden --follow -g "$glob" "$dir"
        ;;
    *)
        echo "error: unknown tool $tool in TOOLS (expected grep and/or glob)" >&2
        exit 2
        ;;
    esac
done
