#!/usr/bin/env python3
"""Times grep through `tackle serve` (answered from its live index) against `rg` on one tree.

Usage: scripts/bench-index.py DIR [TACKLE]
  DIR     the tree (default corpus: $(rustc --print sysroot)/share/doc/rust/html)
  TACKLE  the tackle binary (default target/release/tackle)
Environment: RUNS (default 7) timed runs of each, taken in turn after one warm-up of each.

For each named pattern it prints the median wall time of one `tools/call` of grep through serve
(client-side, request to response) and of one `rg -nH --hidden --follow -e PATTERN DIR` with its
output read through a pipe, their ratio, and both match counts, which must be equal. Then the
index's build time, size (the host's estimate and the server's resident memory) against the
corpus size, and whether the first call after an edit that adds a match finds it.

The server runs with `{"snapshot": false}`: serve's snapshot store otherwise hashes the whole
corpus in the background for undo as it starts, which competes with the timed calls for the
same cores and has nothing to do with search.
"""
import json, os, re, shutil, statistics, subprocess, sys, tempfile, time

PATTERNS = [
    ("common word", "Iterator"),
    ("fn main", r"fn\s+main"),
    ("unsafe fn", "unsafe fn"),
    ("method path", "HashMap::with_capacity"),
    ("type path", "core::ptr::NonNull"),
    ("impl line", "impl<T> Default for"),
    ("case-insensitive", "(?i)deprecated"),
    ("alternation", "unreachable!|todo!"),
    ("rare method", "wrapping_add_signed"),
    ("thread spawn", "thread::spawn"),
    ("absent", "bytemuck_zeroable"),
    ("class + literal", "[Ss]ync_channel"),
]
NO_LITERALS = [("no literal", r"[A-Z]{3}[0-9]{2}")]


class Server:
    def __init__(self, tackle, root, data, log):
        env = dict(os.environ, TACKLE_LOG="info")
        config = os.path.join(data, "bench-config.json")
        with open(config, "w") as f:
            f.write('{"snapshot": false}')
        self.proc = subprocess.Popen(
            [tackle, "--root", root, "--data-dir", data, "--log-file", log, "--config", config,
             "serve", "--yes"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-index", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("tackle serve ended")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def grep(self, pattern):
        start = time.perf_counter()
        answer = self.request("tools/call", {"name": "grep", "arguments": {"pattern": pattern}})
        elapsed = time.perf_counter() - start
        text = "".join(part.get("text", "") for part in answer["result"]["content"])
        found = re.match(r"Found ([\d,]+) match", text)
        return elapsed, int(found.group(1).replace(",", "")) if found else 0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def rg(root, pattern):
    start = time.perf_counter()
    out = subprocess.run(["rg", "-nH", "--hidden", "--follow", "-e", pattern, root],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    return time.perf_counter() - start, out.count(b"\n")


def wait_indexed(log, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(log):
            for line in open(log, errors="replace"):
                if "indexed" in line:
                    return line.strip()
        time.sleep(0.05)
    raise SystemExit("the index was not built in time")


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        subprocess.check_output(["rustc", "--print", "sysroot"], text=True).strip(),
        "share/doc/rust/html")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tackle = sys.argv[2] if len(sys.argv) > 2 else os.path.join(repo, "target/release/tackle")
    runs = int(os.environ.get("RUNS", "7"))
    data = tempfile.mkdtemp()
    log = os.path.join(data, "serve.log")
    files = sum(len(names) for _, _, names in os.walk(root))
    size = subprocess.check_output(["du", "-sb", root], text=True).split()[0]
    print(f"tree: {root} ({files:,} files, {int(size) / 2**20:,.0f} MiB); rg: "
          + subprocess.check_output(["rg", "--version"], text=True).splitlines()[0])
    rss_before = None
    started = time.perf_counter()
    server = Server(tackle, root, data, log)
    rss_before = rss_kib(server.proc.pid)
    line = wait_indexed(log)
    print(f"index built in {time.perf_counter() - started:.2f} s (wall, from serve's start); log: {line}")
    print(f"serve resident memory: {rss_before / 1024:.0f} MiB before the build, "
          f"{rss_kib(server.proc.pid) / 1024:.0f} MiB after")
    ratios = []
    for group, patterns in (("literal", PATTERNS), ("no literal", NO_LITERALS)):
        for label, pattern in patterns:
            server.grep(pattern)
            rg(root, pattern)
            ours, theirs, counts = [], [], set()
            for _ in range(runs):
                t, n = server.grep(pattern)
                ours.append(t)
                r, m = rg(root, pattern)
                theirs.append(r)
                counts.add((n, m))
            o, r = statistics.median(ours), statistics.median(theirs)
            equal = all(n == m for n, m in counts)
            if group == "literal":
                ratios.append(o / r)
            print(f"{label:17} {pattern!r:28} serve {o * 1000:8.1f} ms  rg {r * 1000:8.1f} ms  "
                  f"ratio {o / r:5.3f}  matches {sorted(counts)} {'equal' if equal else 'DIFFER'}")
    print(f"median ratio over the {len(ratios)} literal patterns: {statistics.median(ratios):.3f}")
    for label, pattern in (("glob **/*.html", "**/*.html"), ("glob core/**/fn.*.html", "core/**/fn.*.html")):
        ours, theirs = [], []
        for _ in range(runs):
            start = time.perf_counter()
            server.request("tools/call", {"name": "glob", "arguments": {"pattern": pattern}})
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(["rg", "--files", "--hidden", "--follow", root],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            theirs.append(time.perf_counter() - start)
        o, r = statistics.median(ours), statistics.median(theirs)
        print(f"{label:30} serve {o * 1000:8.1f} ms  rg --files {r * 1000:8.1f} ms  ratio {o / r:5.3f}")
    server.close()
    saved = [os.path.join(data, "index", name) for name in os.listdir(os.path.join(data, "index"))]
    print(f"saved index: {sum(os.path.getsize(p) for p in saved) / 2**20:.0f} MiB on disk")

    # The next start loads the saved index and checks it by fingerprint.
    log2 = os.path.join(data, "serve2.log")
    started = time.perf_counter()
    server = Server(tackle, root, data, log2)
    line = wait_indexed(log2)
    print(f"second start: ready in {time.perf_counter() - started:.2f} s (saved index loaded and checked); log: {line}")
    server.close()

    # The first call after an edit that adds a match finds it (in a small tree of its own).
    edit_root = tempfile.mkdtemp()
    for i in range(200):
        with open(os.path.join(edit_root, f"f{i}.txt"), "w") as f:
            f.write(f"line {i}\n")
    server = Server(tackle, edit_root, tempfile.mkdtemp(), os.path.join(data, "edit.log"))
    wait_indexed(os.path.join(data, "edit.log"))
    before = server.grep("needle_after_edit")[1]
    with open(os.path.join(edit_root, "f7.txt"), "a") as f:
        f.write("needle_after_edit\n")
    after = server.grep("needle_after_edit")[1]
    print(f"edit: matches before {before}, first call after the edit {after}")
    server.close()
    shutil.rmtree(edit_root, ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
