"""The MCP Python SDK as a client of two stdio servers, with the same client code: `tackle serve`
and the Node reference server `@modelcontextprotocol/server-filesystem`.

Each server reads the same small file: 20 warm-up calls, 200 sequential calls (median and p90 of
each call's round trip), then 50 concurrent calls (wall time for all of them). The servers take
turns, `--runs` times, and each run prints both figures and the ratio tackle / Node, so the ratios
come from the same moment of the machine. Run it through `scripts/bench-serve.sh`.
"""

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

WARMUP = 20
SEQUENTIAL = 200
CONCURRENT = 50

# The servers' banners on stderr are not the benchmark's output.
QUIET = open(os.devnull, "w")


async def measure(params, tool, arguments, expected):
    """Times one server's calls; returns (sequential median, p90, concurrent wall), in ms."""
    async with stdio_client(params, errlog=QUIET) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            first = await session.call_tool(tool, arguments)
            text = first.content[0].text
            if first.is_error or expected not in text:
                sys.exit(f"{params.command} {tool} did not read the file: {text[:200]!r}")
            for _ in range(WARMUP):
                await session.call_tool(tool, arguments)
            # The client's collector pauses where its allocation count says, the same place
            # in every session: once in one server's concurrent calls, 30-50 ms. It runs
            # between the measurements instead.
            gc.collect()
            gc.disable()
            sequential = []
            for _ in range(SEQUENTIAL):
                started = time.perf_counter()
                await session.call_tool(tool, arguments)
                sequential.append((time.perf_counter() - started) * 1e3)
            started = time.perf_counter()
            results = await asyncio.gather(
                *(session.call_tool(tool, arguments) for _ in range(CONCURRENT))
            )
            wall = (time.perf_counter() - started) * 1e3
            gc.enable()
            if any(result.is_error for result in results):
                sys.exit(f"{params.command}: a concurrent call failed")
    sequential.sort()
    p90 = sequential[int(len(sequential) * 0.9) - 1]
    return statistics.median(sequential), p90, wall


async def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tackle", required=True, help="the tackle binary")
    parser.add_argument("--node-entry", required=True, help="the reference server's index.js")
    parser.add_argument("--root", required=True, help="the directory both servers serve")
    parser.add_argument("--file", required=True, help="the file both servers read")
    parser.add_argument("--data-dir", required=True, help="tackle's data directory")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    tackle = StdioServerParameters(
        command=args.tackle,
        args=["serve", "--root", args.root, "--data-dir", args.data_dir, "--yes"],
    )
    node = StdioServerParameters(command="node", args=[args.node_entry, args.root])
    expected = "line 1 of the file"
    print(f"{SEQUENTIAL} sequential `read` calls (median, p90) and {CONCURRENT} concurrent "
          f"(wall), times in ms; ratio = tackle / Node")
    print(f"{'run':<4} {'server':<8} {'seq median':>11} {'seq p90':>9} {'conc wall':>10}")
    ratios = []
    for run in range(1, args.runs + 1):
        figures = {
            "tackle": await measure(tackle, "read", {"filePath": args.file}, expected),
            "node": await measure(node, "read_text_file", {"path": args.file}, expected),
        }
        for name, (median, p90, wall) in figures.items():
            print(f"{run:<4} {name:<8} {median:>11.3f} {p90:>9.3f} {wall:>10.2f}")
        ratio = [t / n for t, n in zip(figures["tackle"], figures["node"])]
        ratios.append(ratio)
        print(f"{run:<4} {'ratio':<8} {ratio[0]:>10.2f}x {ratio[1]:>8.2f}x {ratio[2]:>9.2f}x")
    worst = [max(r[i] for r in ratios) for i in range(3)]
    print(f"worst ratio over {args.runs} runs: sequential median {worst[0]:.2f}x, "
          f"concurrent wall {worst[2]:.2f}x (target <= 0.80x)")


asyncio.run(main())
