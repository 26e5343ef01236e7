#!/usr/bin/env bash
# Times a whole `tackle call` process against the same work done by a plain command, in one run.
#
# Usage: [TACKLE_BIN=path] scripts/bench-cli.sh [RUNS]
#   RUNS        timed runs of each command (default 200), interleaved: tackle, anchor, tackle…
#   TACKLE_BIN  the binary to time (default: the release build, built first); for the static
#               build, TACKLE_BIN=$(scripts/build-static.sh)
#
# Cases, each in a fresh temp directory with a warm data directory:
#   read  `tackle call read` of a 2-line file   against `cat` of it         (target: ≤ 3 ms, ≤ 3×)
#   grep  `tackle call grep` in a 3-file tree    against `rg -n` in it       (target: ≤ 1.5×)
# Prints the median and p90 wall time of each and the ratio of the medians. Machines are noisy:
# read the ratio, and run it on an idle machine.
set -euo pipefail

runs=${1:-200}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
rg=$(command -v rg || true)
[[ -n $rg ]] || { echo "error: ripgrep (rg) is not installed; install it with: cargo install ripgrep" >&2; exit 1; }

if [[ -n ${TACKLE_BIN:-} ]]; then
    # Absolute: the commands run in the case's own directory.
    tackle=$(readlink -f "$TACKLE_BIN")
else
    echo "building tackle (release)..." >&2
    (cd "$repo" && cargo build --release --quiet -p tackle-cli)
    tackle=$repo/target/release/tackle
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/src" "$work/data"
printf 'one\ntwo\n' >"$work/tree/a.txt"
printf 'fn main() {\n    run();\n}\n' >"$work/tree/src/main.rs"
printf 'pub fn run() {}\n' >"$work/tree/src/lib.rs"

python3 - "$tackle" "$rg" "$work" "$runs" <<'EOF'
import os, statistics, subprocess, sys, time

tackle, rg, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tree = os.path.join(work, "tree")
env = dict(os.environ, TACKLE_DATA_DIR=os.path.join(work, "data"))
base = [tackle, "--root", tree, "call"]
cases = [
    ("read", base + ["read", '{"filePath":"a.txt"}'], ["cat", "a.txt"]),
    ("grep", base + ["grep", '{"pattern":"fn\\\\s+\\\\w+"}'], [rg, "-n", r"fn\s+\w+"]),
]

def once(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or (cmd[0] == tackle and done.returncode != 0):
        sys.exit(f"error: {' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[:500]}")
    return elapsed * 1000

for name, ours, anchor in cases:
    for _ in range(5):  # warm the page cache and the data directory
        once(ours); once(anchor)
    t, a = [], []
    for _ in range(runs):
        t.append(once(ours)); a.append(once(anchor))
    p90 = lambda xs: sorted(xs)[int(len(xs) * 0.9)]
    mt, ma = statistics.median(t), statistics.median(a)
    print(f"{name}: tackle {mt:.2f} ms (p90 {p90(t):.2f})   {anchor[0].rsplit('/', 1)[-1]} {ma:.2f} ms "
          f"(p90 {p90(a):.2f})   ratio {mt / ma:.2f}   ({runs} runs each, interleaved)")
EOF
