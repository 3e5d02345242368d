"""An MCP client written with the official Python SDK, run against
`aleph-tools serve --builtin --allowed-path DIR --yes [--skills SKILLS] [--code-mode]`.

    builtin_client.py [--skills SKILLS] [--code-mode] DIR -- COMMAND [ARG...]

DIR is the directory the built-in tools are bounded by. With --skills, SKILLS is the served
skills directory, holding `greet/SKILL.md` as the Rust test writes it; the client calls the
skill, edits its file and waits for the edit to be served. With --code-mode, the client runs a
script through `code` that calls three tools. Prints `ok: …` for each check and
`passed: N` at the end; exits non-zero at the first failure.
"""

import argparse
import os
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


async def check_skills(client, skills):
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert "greet" in listed, sorted(listed)
    assert listed["greet"].input_schema["required"] == ["name"], listed["greet"].input_schema
    greeted = await client.call_tool("greet", {"name": "Ada"})
    assert not greeted.is_error, text_of(greeted)
    assert text_of(greeted) == "Say hello to Ada.\n", text_of(greeted)
    ok("a Markdown skill is listed and called with its argument filled in")

    path = os.path.join(skills, "greet", "SKILL.md")
    with open(path + ".tmp", "w") as f:
        f.write("---\ndescription: Greet someone.\narguments:\n  - name: name\n---\nSay goodbye to {{name}}.\n")
    os.replace(path + ".tmp", path)
    for _ in range(200):
        answer = text_of(await client.call_tool("greet", {"name": "Ada"}))
        if answer == "Say goodbye to Ada.\n":
            break
        await anyio.sleep(0.05)
    assert answer == "Say goodbye to Ada.\n", answer
    ok("an edited skill is served without restarting the server")

    prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    assert [(a.name, a.required) for a in prompts["greet"].arguments] == [("name", True)], prompts
    got = await client.get_prompt("greet", {"name": "Ada"})
    assert got.messages[0].role == "user", got.messages
    assert got.messages[0].content.text == "Say goodbye to Ada.\n", got.messages[0]
    ok("the skill is an MCP prompt too, as it is now")


async def check_code_mode(client):
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert "code" in listed, sorted(listed)
    description = listed["code"].description
    for declared in ("file_read(args: {", "file_list(args?: {", "file_search(args?: {"):
        assert declared in description, description
    assert "bash(" not in description, description
    ok("code is listed, its description declaring the tools open to code")

    script = """
        const listing = await tools.file_list({ path: 'notes' });
        const todo = await tools.file_read({ path: 'notes/todo.md' });
        const found = await tools.file_search({ query: 'tea' });
        console.log('read', todo.path);
        return { files: listing.entries.length, todo: todo.content, hits: found.hits.length };
    """
    ran = await client.call_tool("code", {"code": script})
    assert not ran.is_error, text_of(ran)
    assert ran.structured_content["value"] == {"files": 1, "todo": "- tea\n", "hits": 1}, ran.structured_content
    assert ran.structured_content["tool_calls"] == 3, ran.structured_content
    assert "read notes/todo.md" in text_of(ran), text_of(ran)
    ok("a JavaScript script calls three tools in one call")

    python = "todo = await tools.file_read(path='notes/todo.md')\nreturn todo['content'].upper()"
    ran = await client.call_tool("code", {"language": "python", "code": python})
    assert ran.structured_content["value"] == "- TEA\n", text_of(ran)
    ok("a Python script calls a tool")

    refused = await client.call_tool("code", {"code": "return await tools.bash({ command: 'id' })"})
    assert refused.is_error, text_of(refused)
    assert "`bash` is not a tool this script may call" in text_of(refused), text_of(refused)
    ok("a tool not open to code is refused to a script")


async def run(server, root, skills, code_mode):
    async with Client(server, mode="legacy") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = {"file_read", "file_write", "file_edit", "bash", "code_exec", "web_fetch", "list_tools"}
        assert expected <= set(listed), sorted(listed)
        assert listed["file_read"].annotations.read_only_hint is True, listed["file_read"].annotations
        assert listed["file_delete"].annotations.destructive_hint is True, listed["file_delete"].annotations
        ok("tools/list: the built-in tools with their annotations")

        written = await client.call_tool("file_write", {"path": "notes/todo.md", "content": "- tea\n"})
        assert not written.is_error, text_of(written)
        with open(os.path.join(root, "notes", "todo.md")) as f:
            assert f.read() == "- tea\n"
        ok("file_write (needs confirmation: approved by --yes) writes inside the allowed directory")

        read = await client.call_tool("file_read", {"path": "notes/todo.md"})
        assert read.structured_content["content"] == "- tea\n", read.structured_content
        ok("file_read reads it back")

        escaped = await client.call_tool("file_read", {"path": "../../../etc/passwd"})
        assert escaped.is_error, text_of(escaped)
        assert "outside the allowed directories" in text_of(escaped), text_of(escaped)
        ok("a path outside the allowed directory is an error result")

        ran = await client.call_tool("bash", {"command": "cd .. && cat notes/todo.md"})
        assert not ran.is_error, text_of(ran)
        assert ran.structured_content["stdout"] == "- tea\n", ran.structured_content
        ok("bash runs beside the workspace")

        python = await client.call_tool("code_exec", {"language": "python", "code": "print(sum(range(10)))"})
        assert python.structured_content["stdout"] == "45\n", python.structured_content
        ok("code_exec runs Python")

        tools = await client.call_tool("list_tools", {})
        names = [tool["name"] for tool in tools.structured_content["tools"]]
        assert "file_read" in names and "list_tools" in names, names
        ok("list_tools lists the served tools")

        if skills:
            await check_skills(client, skills)
        if code_mode:
            await check_code_mode(client)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--skills")
    parser.add_argument("--code-mode", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    server = StdioServerParameters(command=command[0], args=command[1:])
    anyio.run(run, server, args.root, args.skills, args.code_mode)
    print(f"passed: {len(CHECKS)}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"failed: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
