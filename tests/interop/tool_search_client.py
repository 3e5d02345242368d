"""An MCP client written with the official Python SDK, run against
`aleph-tools serve --builtin --defer 'file_*' --yes --allowed-path DIR`, where DIR holds
`notes.txt` (`- tea`).

    tool_search_client.py -- COMMAND [ARG...]

Checks that the deferred file tools are not listed, that `tool_search` finds them with their
schemas (by words and by pattern), and that `call_tool` runs one. Prints `ok: …` for each
check and `passed: N` at the end; exits non-zero at the first failure.
"""

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
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert {"tool_search", "call_tool", "bash"} <= listed, sorted(listed)
        assert not any(name.startswith("file_") for name in listed), sorted(listed)
        ok("deferred tools are not listed; tool_search and call_tool are")

        found = await client.call_tool("tool_search", {"query": "read the text of a file"})
        assert not found.is_error, text_of(found)
        tools = found.structured_content["tools"]
        names = [tool["name"] for tool in tools]
        assert "file_read" in names, names
        schema = tools[names.index("file_read")]["input_schema"]
        assert "path" in schema["properties"], schema
        assert "file_read" in text_of(found), text_of(found)
        ok("tool_search finds file_read by words, with its schema")

        by_pattern = await client.call_tool("tool_search", {"pattern": "^file_(read|write)$"})
        names = [tool["name"] for tool in by_pattern.structured_content["tools"]]
        assert names == ["file_read", "file_write"], names
        ok("tool_search finds tools by pattern")

        read = await client.call_tool("call_tool", {"name": "file_read", "arguments": {"path": "notes.txt"}})
        assert not read.is_error, text_of(read)
        assert read.structured_content["content"] == "- tea\n", read.structured_content
        ok("call_tool runs a found tool")

        wrong = await client.call_tool("call_tool", {"name": "file_read", "arguments": {"path": 7}})
        assert wrong.is_error, text_of(wrong)
        assert "/path" in text_of(wrong), text_of(wrong)
        ok("call_tool's arguments are checked against the found tool's schema")


def main():
    command = sys.argv[2:] if sys.argv[1:2] == ["--"] else sys.argv[1:]
    anyio.run(run, StdioServerParameters(command=command[0], args=command[1:]))
    print(f"passed: {len(CHECKS)}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"failed: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
