#!/usr/bin/env bash
# Builds `tackle` for Linux as one static, position-dependent executable, and prints its path.
#
# Usage: [PGO=1] scripts/build-static.sh
#
# A static `tackle` maps no shared libraries and resolves no symbols when it starts: about
# 0.4 ms less per process on a 2-core VM (`tackle --version` 0.96 ms against 1.38 ms), which a
# `tackle call` pays on every call. glibc's static `getaddrinfo` reads /etc/hosts and DNS itself;
# name services loaded as plugins (mDNS, LDAP, systemd-resolved's NSS module) are not consulted,
# so resolve such names through DNS or use the default dynamic build.
#
# The flags apply to the target only (`--target`), so build scripts and proc macros stay dynamic
# as they must. The binary lands in target/<host triple>/release/tackle; install it with
#   RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
#     cargo install --locked --path crates/tackle-cli --target "$(rustc -vV | sed -n 's/^host: //p')"
#
# PGO=1 builds the same static binary with profile-guided optimization: an instrumented build
# (target/pgo/generate) runs a training workload in a temp directory with its own HOME and data
# directory (`--version`, `call` of read, grep, glob, list, write, edit and bash on small files,
# `tools`, and a short `serve` session over stdio), the toolchain's `llvm-profdata` merges the
# counts (`rustup component add llvm-tools` is run when it is missing), and a second build
# (target/pgo/use) uses them, so the code the calls run is laid out together and optimized for
# them. It costs two full release builds: on the 2-core VM, under other builds, 19 min
# instrumented (a rebuild of only tackle-cli: under 2 min), 3 s of training and 14 min
# optimized (always full: a new profile rebuilds every crate). Measured with
# `TACKLE_BIN=… scripts/bench-cli.sh 300`, 9 rounds alternating with the plain static build:
# `tackle call read` 2.40 ms against 2.80 ms (median; 2.86× `cat` against 3.05×), `call grep`
# 4.58 ms against 5.10 ms, 17% fewer page faults (312 against 378 per `call read`, from
# `perf stat`); `--version` is unchanged. The binary lands in
# target/pgo/use/<host triple>/release/tackle; copy it onto your PATH to install it.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
triple=$(rustc -vV | sed -n 's/^host: //p')
case $triple in
    *-linux-gnu) ;;
    *) echo "error: a static build is for Linux with glibc; this host is $triple" >&2; exit 1 ;;
esac
static_flags="-C target-feature=+crt-static -C relocation-model=static"

# Builds tackle-cli for the target with the static flags and the flags `$1`, into target dir
# `$2` (empty: the default one); with a label `$3`, says on stderr how long it took.
build() {
    local extra=$1 target_dir=$2 label=$3 start=$SECONDS
    local args=(build --release --quiet -p tackle-cli --target "$triple")
    [[ -n $target_dir ]] && args+=(--target-dir "$target_dir")
    (cd "$repo" && RUSTFLAGS="$static_flags${extra:+ $extra}" cargo "${args[@]}")
    [[ -z $label ]] || echo "pgo: $label took $((SECONDS - start)) s" >&2
}

# The calls the instrumented binary `$1` makes to collect its profile, in a temp directory with
# its own HOME and data directory (never the user's), removed on exit.
train() {
    local tackle=$1
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/root/src" "$work/data/tmp" "$work/home"
    local root=$work/root
    printf 'one\ntwo\n' >"$root/a.txt"
    printf 'fn main() {\n    run();\n}\n' >"$root/src/main.rs"
    printf 'pub fn run() {}\n' >"$root/src/lib.rs"
    for i in $(seq 1 200); do echo "line $i of a longer file"; done >"$root/long.txt"

    local env=(env -u TACKLE_MODEL -u TACKLE_LOG -u XDG_CONFIG_HOME -u XDG_DATA_HOME
        HOME="$work/home" TMPDIR="$work/data/tmp" TACKLE_DATA_DIR="$work/data")
    run() { (cd "$root" && "${env[@]}" "$tackle" "$@" >/dev/null); }
    local i
    for i in 1 2 3 4 5; do
        run --version
        run call read '{"filePath":"a.txt"}'
        run call read '{"filePath":"a.txt"}'
        run call read '{"filePath":"long.txt","offset":50,"limit":20}'
        run call read '{"filePath":"src"}'
        run call grep '{"pattern":"fn\\s+\\w+"}'
        run call grep '{"pattern":"line 1\\d","include":"*.txt"}'
        run call glob '{"pattern":"**/*.rs"}'
        run call list '{}'
        run call write "{\"filePath\":\"new$i.txt\",\"content\":\"first\\nsecond\\n\"}"
        run call read "{\"filePath\":\"new$i.txt\"}"
        run call edit "{\"filePath\":\"new$i.txt\",\"oldString\":\"second\",\"newString\":\"third\"}"
        run call bash '{"command":"echo hello","description":"Print a greeting"}'
        run tools
    done

    # A short `serve` session over stdio: initialize, tools/list, and a few calls.
    (cd "$root" && "${env[@]}" python3 - "$tackle" <<'EOF'
import json, subprocess, sys

server = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def send(message):
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()

def ask(id, method, params):
    send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    for line in server.stdout:
        answer = json.loads(line)
        if answer.get("id") == id:
            if "result" not in answer or answer["result"].get("isError"):
                sys.exit(f"error: serve answered {method} with {answer}")
            return answer["result"]
    sys.exit(f"error: serve closed its output before answering {method}")

ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "pgo-training", "version": "0"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
ask(1, "tools/list", {})
calls = [("read", {"filePath": "a.txt"}), ("read", {"filePath": "long.txt", "limit": 30}),
         ("grep", {"pattern": "fn\\s+\\w+"}), ("glob", {"pattern": "**/*.txt"})]
for i in range(20):
    name, args = calls[i % len(calls)]
    ask(2 + i, "tools/call", {"name": name, "arguments": args})
server.stdin.close()
sys.exit(server.wait())
EOF
    )
}

if [[ -z ${PGO:-} || ${PGO:-} == 0 ]]; then
    build "" "" ""
    binary=$repo/target/$triple/release/tackle
else
    command -v python3 >/dev/null || { echo "error: PGO=1 needs python3 (it drives \`tackle serve\`)" >&2; exit 1; }
    profdata=$(rustc --print sysroot)/lib/rustlib/$triple/bin/llvm-profdata
    if [[ ! -x $profdata ]]; then
        echo "pgo: llvm-profdata is missing; installing it: rustup component add llvm-tools" >&2
        rustup component add llvm-tools >&2
    fi
    pgo=$repo/target/pgo
    profiles=$pgo/profiles
    # Two PGO builds at once would train into the same counts and delete each other's profile.
    mkdir -p "$pgo"
    exec 9>"$pgo/lock"
    flock -n 9 || { echo "error: another PGO build is running in $pgo" >&2; exit 1; }
    rm -rf "$profiles"
    mkdir -p "$profiles"

    build "-C profile-generate=$profiles" "$pgo/generate" "the instrumented build"
    start=$SECONDS
    LLVM_PROFILE_FILE="$profiles/tackle-%m.profraw" train "$pgo/generate/$triple/release/tackle"
    echo "pgo: the training run took $((SECONDS - start)) s" >&2

    shopt -s nullglob
    raw=("$profiles"/*.profraw)
    ((${#raw[@]})) || { echo "error: the training run wrote no profile in $profiles" >&2; exit 1; }
    rm -f "$pgo"/*.profdata
    "$profdata" merge -o "$pgo/merged.profdata" "${raw[@]}"
    # Named by its content: a new profile is a new RUSTFLAGS, so Cargo rebuilds every crate.
    merged=$pgo/tackle-$(sha256sum "$pgo/merged.profdata" | cut -c1-12).profdata
    mv "$pgo/merged.profdata" "$merged"

    build "-C profile-use=$merged -C llvm-args=-no-pgo-warn-mismatch" "$pgo/use" \
        "the optimized build"
    binary=$pgo/use/$triple/release/tackle
fi
# A broken link (a static binary with an interpreter) crashes at once; say so here.
"$binary" --version >/dev/null || { echo "error: the static build does not run: $binary" >&2; exit 1; }
echo "$binary"
