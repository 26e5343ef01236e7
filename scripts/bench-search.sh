#!/usr/bin/env bash
# Times tackle's grep and glob tools against ripgrep on one directory tree.
#
# Usage: scripts/bench-search.sh DIR [PATTERN] [GLOB...]
#   DIR      the tree to search (the Location root of tackle)
#   PATTERN  the regex for grep (default: fn\s+main)
#   GLOB     one or more globs for glob (default: *.html), each compared on its own
# Environment:
#   RUNS (default 7)   timed runs of each command, taken in turn (tackle, rg, tackle, rg, ...)
#                      after one warm-up run of each
#   TOOLS              which comparisons to run (default "grep glob"); "floor" adds tackle's
#                      per-process cost: glob in an empty directory against rg there
#   TACKLE             a tackle binary to time instead of building target/release/tackle
#   TACKLE_BEFORE      another tackle binary (an older build, say), timed in the same turns
#
# Prints the median wall time of each command and its ratio to rg's.
set -euo pipefail

usage() {
    echo "usage: $0 DIR [PATTERN] [GLOB...]" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
dir=$1
pattern=${2:-'fn\s+main'}
shift $(($# >= 2 ? 2 : 1))
globs=("$@")
[[ ${#globs[@]} -gt 0 ]] || globs=('*.html')
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
tackle=${TACKLE:-}
if [[ -z $tackle ]]; then
    echo "building tackle (release)..." >&2
    (cd "$repo" && cargo build --release --quiet -p tackle-cli)
    tackle=$repo/target/release/tackle
fi
[[ -x $tackle ]] || { echo "error: $tackle is not an executable" >&2; exit 1; }
before=${TACKLE_BEFORE:-}
[[ -z $before || -x $before ]] || { echo "error: $before is not an executable" >&2; exit 1; }

data_dir=$(mktemp -d)
empty_dir=$(mktemp -d)
trap 'rm -rf "$data_dir" "$empty_dir"' EXIT

# A string as a JSON string literal (backslashes and quotes escaped).
json_string() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

# Wall time of one run of "$@" in milliseconds, to 0.1 ms (output discarded, exit status
# ignored: rg exits 1 when nothing matches).
time_ms() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.1f", ns / 1e6 }'
}

median() {
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() {
    awk -v t="$1" -v r="$2" 'BEGIN { if (r > 0) printf "%.2f", t / r; else print "n/a" }'
}

# compare LABEL ROOT TOOL ARGS_JSON -- RG_ARGS...
# Runs each tackle build and rg in turn, RUNS times, and prints the medians.
compare() {
    local label=$1 root=$2 tool=$3 args=$4
    shift 5
    local rg_cmd=("$rg" "$@")
    local builds=("$tackle")
    [[ -z $before ]] || builds+=("$before")

    # Warm the cache, and make sure the tool works before timing it.
    local build out status
    for build in "${builds[@]}"; do
        status=0
        out=$("$build" --root "$root" --data-dir "$data_dir" call --yes "$tool" "$args" 2>&1) ||
            status=$?
        if [[ $status -ne 0 ]]; then
            echo "error: $build $tool failed (exit $status):" >&2
            printf '%s\n' "$out" | head -20 >&2
            exit 1
        fi
    done
    "${rg_cmd[@]}" >/dev/null 2>&1 || true

    local -a now_times=() before_times=() rg_times=()
    local i
    for ((i = 0; i < runs; i++)); do
        now_times+=("$(time_ms "$tackle" --root "$root" --data-dir "$data_dir" call --yes "$tool" "$args")")
        if [[ -n $before ]]; then
            before_times+=("$(time_ms "$before" --root "$root" --data-dir "$data_dir" call --yes "$tool" "$args")")
        fi
        rg_times+=("$(time_ms "${rg_cmd[@]}")")
    done
    local t r
    t=$(median "${now_times[@]}")
    r=$(median "${rg_times[@]}")
    printf '%-24s tackle %8s ms  rg %8s ms  tackle/rg %s' "$label" "$t" "$r" "$(ratio "$t" "$r")"
    if [[ -n $before ]]; then
        local b
        b=$(median "${before_times[@]}")
        printf '  before %8s ms  before/rg %s' "$b" "$(ratio "$b" "$r")"
    fi
    printf '   (median of %d; tackle: %s; rg: %s' "$runs" "${now_times[*]}" "${rg_times[*]}"
    [[ -z $before ]] || printf '; before: %s' "${before_times[*]}"
    printf ')\n'
}

echo "tree: $dir" >&2
echo "tackle: $tackle${before:+; before: $before}; rg: $rg ($("$rg" --version | head -1))" >&2
for tool in $tools; do
    case $tool in
    grep)
        compare "grep $pattern" "$dir" grep "{\"pattern\": $(json_string "$pattern")}" -- \
            -nH --hidden --follow -e "$pattern" "$dir"
        ;;
    glob)
        for glob in "${globs[@]}"; do
            compare "glob $glob" "$dir" glob "{\"pattern\": $(json_string "$glob")}" -- \
                --files --hidden --follow -g "$glob" "$dir"
        done
        ;;
    floor)
        compare "floor (empty dir)" "$empty_dir" glob '{"pattern": "*"}' -- \
            --files --hidden --follow "$empty_dir"
        ;;
    *)
        echo "error: unknown tool $tool in TOOLS (expected grep, glob and/or floor)" >&2
        exit 2
        ;;
    esac
done
