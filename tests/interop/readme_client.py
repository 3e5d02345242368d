"""An MCP client written with the official Python SDK, run against the README's quick start:
a new crate's binary that serves an `add` tool over stdio.

    readme_client.py -- COMMAND [ARG...]

Prints `ok: …` for each check and `passed: N` at the end; exits non-zero at the first
failure.
"""

import argparse
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CHECKS = []


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def run(server):
    async with Client(server, mode="legacy") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(listed) == ["add"], sorted(listed)
        add = listed["add"]
        assert add.description == "Add two integers.", add.description
        schema = add.input_schema
        assert schema["required"] == ["a", "b"], schema
        assert schema["properties"]["a"]["description"] == "First addend", schema
        assert schema["properties"]["b"]["type"] == "integer", schema
        assert add.annotations.read_only_hint is True, add.annotations
        ok("tools/list: `add` with its description, argument docs and read-only hint")

        added = await client.call_tool("add", {"a": 2, "b": 40})
        assert not added.is_error, text_of(added)
        assert text_of(added) == "42", text_of(added)
        assert added.structured_content == {"result": 42}, added.structured_content
        ok("tools/call: add(2, 40) is 42")

        wrong = await client.call_tool("add", {"a": "two", "b": 40})
        assert wrong.is_error, text_of(wrong)
        assert "`/a`: expected an integer" in text_of(wrong), text_of(wrong)
        ok("a wrong argument is an error result naming it")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    server = StdioServerParameters(command=command[0], args=command[1:])
    anyio.run(run, server)
    print(f"passed: {len(CHECKS)}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"failed: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
