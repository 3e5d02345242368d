"""SSE polling of aleph-tools' HTTP MCP server, checked with the official Python SDK.

    polling_client.py URL

The server (`tests/tests/suite/mcp_polling.rs`) closes each request's event stream after
300 ms and serves `slow`, which counts in 50 ms steps with progress. The SDK reconnects with
`Last-Event-ID` by itself. Prints `ok: …` for each check and `passed: N` at the end; exits
non-zero at the first failure.
"""

import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

CHECKS = []


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def run(url):
    async with Client(streamable_http_client(url), mode="legacy") as client:
        steps = []

        async def heard(progress, total, message):
            steps.append(int(progress))

        result = await client.call_tool("slow", {"steps": 20}, progress_callback=heard)
        assert not result.is_error and text_of(result) == "counted to 20", result
        assert sorted(set(steps)) == list(range(1, 21)), steps
        ok("a call longer than its stream is answered after the SDK reconnects, every step heard")

        results = {}

        async def count(steps):
            results[steps] = text_of(await client.call_tool("slow", {"steps": steps}))

        async with anyio.create_task_group() as group:
            for steps in (8, 12, 16):
                group.start_soon(count, steps)
        assert results == {n: f"counted to {n}" for n in (8, 12, 16)}, results
        ok("three cut calls at once each get their own answer")

    print(f"passed: {len(CHECKS)}", flush=True)


if __name__ == "__main__":
    try:
        anyio.run(run, sys.argv[1])
    except Exception as error:  # report the first failed check and fail
        print(f"FAILED after {len(CHECKS)} checks: {error!r}", file=sys.stderr, flush=True)
        raise
