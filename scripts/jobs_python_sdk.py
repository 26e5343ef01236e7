"""A dev server through `tackle serve` and the official MCP Python SDK (stdio client).

Starts `python3 -m http.server` as a background job, queries it with curl from a second bash
call, reads the job's log with bash_output, kills it with bash_kill, and closes the client.
Usage: jobs_python_sdk.py TACKLE ROOT DATA. Prints one line per step; exits non-zero on the
first step that does not behave.
"""

import asyncio
import os
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def check(condition, what, text):
    if not condition:
        print(f"FAIL {what}: {text!r}")
        sys.exit(1)
    print(f"OK {what}")


async def main(tackle, root, data):
    server = StdioServerParameters(
        command=tackle,
        args=["--root", root, "--data-dir", data, "serve", "--yes"],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            check({"bash_output", "bash_input", "bash_kill"} <= names, "job tools listed", names)

            started = await session.call_tool(
                "bash",
                {"command": "exec python3 -u -m http.server 0 --bind 127.0.0.1", "runInBackground": True},
            )
            text = started.content[0].text
            port = re.search(r"port (\d+)", text)
            check(not started.is_error and port, "dev server started", text)
            job = re.search(r"(job-\d+)", text).group(1)

            fetched = await session.call_tool(
                "bash", {"command": f"curl -s http://127.0.0.1:{port.group(1)}/ | head -c 200"}
            )
            check("Directory listing" in fetched.content[0].text, "dev server answered", fetched.content[0].text)

            log = await session.call_tool("bash_output", {"jobId": job, "wait": 5000})
            check('"GET / HTTP/1.1" 200' in log.content[0].text, "request logged", log.content[0].text)

            killed = await session.call_tool("bash_kill", {"jobId": job})
            check("stopped by tackle" in killed.content[0].text, "dev server killed", killed.content[0].text)

            # One more, left running: closing the client must end it.
            left = await session.call_tool("bash", {"command": "sleep 900", "runInBackground": True})
            check(not left.is_error, "a job left running", left.content[0].text)
    print("CLOSED")


asyncio.run(main(*sys.argv[1:4]))
