"""Replicas of aleph-tools' HTTP server behind a load balancer, driven with the official
Python SDK.

    replicas_client.py --url URL --token TOKEN --other-token TOKEN

The replicas (`aleph-tools-cli/tests/cli/replicas.rs`) share sessions and tasks through Redis
and serve a Node.js plugin's `echo` and its task `wait` (a minute, unless cancelled); the
balancer in front sends each request to the next replica, with no stickiness. Prints
`ok: …` for each check and `passed: N` at the end; exits non-zero at the first failure.
"""

import argparse
import sys

import anyio
import httpx2
from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The tasks extension's requests, as the main interop client declares them.
from client import ANY, TASKS, CancelTask, GetTask, TaskHandle, TaskId

CHECKS = []


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


class CancellingTasks(ClientExtension):
    """The tasks extension: a task is polled a few times (each poll reaching whichever
    replica the balancer picks), cancelled, and polled until it says so."""

    identifier = TASKS

    def __init__(self):
        self.seen = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        session = ctx.session
        get = GetTask(params=TaskId(task_id=handle.task_id))
        with anyio.fail_after(30):
            for _ in range(6):
                task = await session.send_request(get, ANY)
                self.seen.append(task["status"])
                await anyio.sleep(0.05)
            await session.send_request(CancelTask(params=TaskId(task_id=handle.task_id)), ANY)
            while True:
                task = await session.send_request(get, ANY)
                self.seen.append(task["status"])
                if task["status"] != "working":
                    break
                await anyio.sleep(0.05)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=task["status"])]
        )


def connect(url, mode, token, extensions=()):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(
        streamable_http_client(url, http_client=http), mode=mode, extensions=list(extensions)
    )


async def calls(url, mode, token):
    async with connect(url, mode, token) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"echo", "wait"} <= tools, tools
        # Twelve calls: every replica serves several, in whichever session the client holds.
        for n in range(12):
            result = await client.call_tool("echo", {"text": f"call {n}"})
            assert not result.is_error, result
            text = "".join(block.text for block in result.content if block.type == "text")
            assert f"call {n}" in text, text
        return client.protocol_version


async def run(url, token, other):
    version = await calls(url, "legacy", token)
    ok(f"a session opened through the balancer is served by every replica ({version})")
    version = await calls(url, "auto", token)
    ok(f"calls through the balancer are answered ({version})")

    # The SDK takes task handles from servers it speaks 2026-07-28 to: no session at all.
    tasks = CancellingTasks()
    async with connect(url, "auto", token, [tasks]) as client:
        result = await client.call_tool("wait", {})
        text = "".join(block.text for block in result.content if block.type == "text")
        assert text == "cancelled", (text, tasks.seen)
        assert tasks.seen[0] == "working" and tasks.seen[-1] == "cancelled", tasks.seen
    ok("a task is polled and cancelled through whichever replicas the balancer picks")

    async with httpx2.AsyncClient() as http:
        anonymous = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert anonymous.status_code == 401, anonymous
    ok("every replica asks for a token")

    # Another identity opens a session of its own.
    async with connect(url, "legacy", other) as client:
        await client.call_tool("echo", {"text": "mine"})
    ok("another identity's token opens a session of its own")

    print(f"passed: {len(CHECKS)}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--other-token", required=True)
    args = parser.parse_args()
    try:
        anyio.run(run, args.url, args.token, args.other_token)
    except Exception as error:  # noqa: BLE001 - the failure is reported, then the exit code
        print(f"failed: {error!r}", flush=True)
        raise
    sys.exit(0)


if __name__ == "__main__":
    main()
