"""An MCP client written with the official Python SDK, run against `aleph-tools serve`.

    plugins_client.py --add SRC --into DIR -- COMMAND [ARG...]

The command serves the example plugins (with `echo` blocked by its config). Prints
`ok: …` for each check and `passed: N` at the end; exits non-zero at the first failure.
SRC is a plugin directory the client moves into DIR, a search path, while connected: the
server must load it by itself and say so with `notifications/tools/list_changed`.
"""

import argparse
import os
import shutil
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


async def run(server, add, into):
    changed = anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = {"word_count", "slugify", "fetch", "forecast", "note_add", "note_list"}
        assert expected <= set(listed), sorted(listed)
        assert "echo" not in listed, sorted(listed)
        ok("tools/list: WebAssembly and Node.js plugin tools, filtered by the config")

        counts = listed["word_count"]
        assert counts.description.startswith("Count the words"), counts.description
        assert counts.input_schema["required"] == ["text"], counts.input_schema
        ok("descriptions and schemas from the manifests")

        counted = await client.call_tool("word_count", {"text": "one two three"})
        assert not counted.is_error, counted
        assert counted.structured_content["words"] == 3, counted.structured_content
        ok("a WebAssembly plugin tool answers")

        notes = await client.call_tool("note_list", {})
        assert not notes.is_error, notes
        ok("a Node.js plugin tool answers")

        repaired = await client.call_tool("WordCount", {"text": "a b"})
        assert not repaired.is_error, repaired
        assert repaired.structured_content["words"] == 2, repaired.structured_content
        ok("name repair")

        wrong = await client.call_tool("word_count", {"text": 5})
        assert wrong.is_error is True, wrong
        assert "`/text`" in text_of(wrong), text_of(wrong)
        ok("invalid arguments are an isError result naming the argument")

        blocked = await client.call_tool("echo", {"text": "hi"})
        assert blocked.is_error is True, blocked
        ok("a blocked tool is refused")

        staged = os.path.join(into, "." + os.path.basename(add))
        shutil.copytree(add, staged, symlinks=True)
        os.rename(staged, os.path.join(into, os.path.basename(add)))
        with anyio.fail_after(20):
            await changed.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "greet" in names, sorted(names)
        greeted = await client.call_tool("greet", {"who": "python"})
        assert text_of(greeted) == "hello python", greeted
        ok("a plugin added while serving is loaded, announced and called")

    print(f"passed: {len(CHECKS)}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--add", required=True)
    parser.add_argument("--into", required=True)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    server = StdioServerParameters(command=args.command[0], args=args.command[1:])
    anyio.run(run, server, args.add, args.into)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report the first failed check and fail
        print(f"FAILED after {len(CHECKS)} checks: {error!r}", file=sys.stderr, flush=True)
        raise
