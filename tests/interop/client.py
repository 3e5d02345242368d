"""An MCP client written with the official Python SDK, run against aleph-tools' MCP server.

    client.py --stdio COMMAND [ARG...] --mode legacy|auto
    client.py --url URL --mode legacy|auto

Runs every check against the tools of `aleph_tools_tests::mcp_test_server`, prints `ok: …`
for each and `passed: N` at the end; exits non-zero at the first failure.
"""

import argparse
import base64
import sys
from typing import Any, Literal

import anyio
from mcp import Client, MCPError, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters
from pydantic import TypeAdapter

CHECKS = []


def ok(name):
    CHECKS.append(name)
    print(f"ok: {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def list_all(client, page_size):
    """Every tool, page by page; checks the pages are full but for the last, in name order."""
    tools, cursor, pages = [], None, 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
        assert len(page.tools) == page_size, (len(page.tools), page_size)
    names = [tool.name for tool in tools]
    assert names == sorted(names) and len(set(names)) == len(names), names
    return {tool.name: tool for tool in tools}, pages


NOTE = "memo://note"
TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict[str, Any])


class TaskId(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskId, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class CancelTask(types.Request[TaskId, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class TaskHandle(types.Result):
    """The `CreateTaskResult` a tasks server may answer `tools/call` with."""

    result_type: Literal["task"]
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


async def poll(session, task_id, until):
    """`tasks/get` at the server's interval until `until(task)`; returns that task."""
    with anyio.fail_after(20):
        while True:
            task = await session.send_request(GetTask(params=TaskId(task_id=task_id)), ANY)
            assert task["resultType"] == "complete", task
            if until(task):
                return task
            await anyio.sleep(task.get("pollIntervalMs", 100) / 1000)


class Tasks(ClientExtension):
    """The tasks extension (SEP-2663), built on the SDK's claims: a `tools/call` answered
    with a task handle is polled to its end. Keeps what it saw, for the checks."""

    identifier = TASKS

    def __init__(self):
        self.handles = []
        self.statuses = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(handle)

        def ended(task):
            self.statuses.append((task["status"], task.get("statusMessage")))
            return task["status"] in ("completed", "failed", "cancelled")

        task = await poll(ctx.session, handle.task_id, ended)
        assert task["status"] == "completed", task
        return types.CallToolResult.model_validate(task["result"])


async def run(server, mode, new_tool):
    changed = anyio.Event()
    updated = []
    logs = []

    async def on_message(message):
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            changed.set()
        elif method == "notifications/resources/updated":
            updated.append(message.params.uri)

    async def on_log(params):
        logs.append((params.level, params.logger, params.data))

    # What the user answers to each question, in order, and the questions asked.
    answers = []
    asked = []

    async def on_elicit(context, params):
        asked.append(params)
        return answers.pop(0)

    sampled = []

    async def on_sample(context, params):
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="old pond, a frog"),
            model="loopback-model",
            stop_reason="endTurn",
        )

    tasks = Tasks()
    async with Client(
        server,
        mode=mode,
        extensions=[tasks],
        message_handler=on_message,
        logging_callback=on_log,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        # Handshake-free connections opt in to log messages per request.
        log_level="warning",
    ) as client:
        print(f"protocol: {client.protocol_version}", flush=True)

        listed, pages = await list_all(client, 100)
        assert {"add", "get_weather", "fail", "slow", "grow", "draw"} <= set(listed), sorted(listed)
        assert {f"echo_{i:03}" for i in range(250)} <= set(listed), sorted(listed)
        assert pages == 3, pages
        ok("tools/list names, 259 tools in three pages")

        try:
            await client.list_tools(cursor="not-a-cursor!")
        except MCPError as error:
            assert error.code == -32602, error.error
        else:
            raise AssertionError("a made-up cursor was accepted")
        ok("a cursor the server never gave is invalid params")

        weather = listed["get_weather"]
        assert weather.description == "Current weather for a city.", weather.description
        assert weather.input_schema["type"] == "object"
        assert weather.input_schema["required"] == ["city"], weather.input_schema
        assert "city" in weather.input_schema["properties"]
        assert weather.output_schema["properties"].keys() >= {"city", "celsius"}
        assert weather.annotations.read_only_hint is True
        assert weather.annotations.open_world_hint is True
        assert listed["fail"].annotations.destructive_hint is True
        if mode == "legacy":
            # An output schema's root must be an object: a number is wrapped.
            assert listed["add"].output_schema["properties"]["result"]["type"] == "integer"
        else:
            # 2026-07-28 takes any schema as it is.
            assert listed["add"].output_schema["type"] == "integer", listed["add"].output_schema
        draw = listed["draw"]
        assert draw.title == "Pixel painter", draw
        assert [icon.src for icon in draw.icons] == ["https://example.com/brush.svg"], draw.icons
        assert draw.meta == {"example.com/preview": True}, draw.meta
        ok("descriptions, schemas, output schemas, annotations, title, icons, _meta")

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert not added.is_error, added
        assert text_of(added) == "5", text_of(added)
        expected = {"result": 5} if mode == "legacy" else 5
        assert added.structured_content == expected, added.structured_content
        ok("call: text and structured content")

        lisbon = await client.call_tool("get_weather", {"city": "Lisbon"})
        assert not lisbon.is_error, lisbon
        assert lisbon.structured_content["city"] == "Lisbon", lisbon.structured_content
        assert "Lisbon" in text_of(lisbon)
        ok("call: object output as structured content")

        failed = await client.call_tool("fail", {"message": "no luck today"})
        assert failed.is_error is True, failed
        assert "no luck today" in text_of(failed), text_of(failed)
        ok("tool failure is an isError result with the message")

        wrong = await client.call_tool("add", {"a": "two", "b": 3})
        assert wrong.is_error is True, wrong
        assert "`/a`" in text_of(wrong), text_of(wrong)
        ok("invalid arguments are an isError result naming the argument")

        try:
            unknown = await client.call_tool("ad", {"a": 1, "b": 2})
        except MCPError as error:
            assert error.code == -32602, error.error
            assert "unknown tool `ad`" in error.message, error.message
            assert "`add`" in error.message, "suggests the closest name: " + error.message
        else:
            raise AssertionError(f"an unknown tool answered: {unknown}")
        ok("unknown tool is a protocol error (invalid params) that suggests a name")

        drawn = await client.call_tool("draw", {"color": "red"})
        assert not drawn.is_error, drawn
        kinds = [block.type for block in drawn.content]
        assert kinds == ["text", "image", "resource_link"], kinds
        image = drawn.content[1]
        assert image.mime_type == "image/png", image
        assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n"), image.data
        assert drawn.content[2].uri == "test://palette", drawn.content[2]
        ok("image and resource link blocks")

        repaired = await client.call_tool("Add", {"a": 20, "b": 22})
        assert not repaired.is_error and text_of(repaired) == "42", repaired
        ok("name repair")

        prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
        review = prompts["review"]
        assert review.title == "Code review", review
        assert [(a.name, a.required) for a in review.arguments] == [("diff", True), ("focus", False)], review
        got = await client.get_prompt("review", {"diff": "-a\n+b", "focus": "style"})
        assert [m.role for m in got.messages] == ["user", "assistant"], got.messages
        assert got.messages[0].content.text == "Review this diff for style:\n-a\n+b", got.messages[0]
        try:
            await client.get_prompt("review", {"focus": "style"})
        except MCPError as error:
            assert error.code == -32602 and "`diff`" in error.message, error.error
        else:
            raise AssertionError("a prompt was given without its required argument")
        ok("a prompt listed and fetched; a missing argument is invalid params")

        resources = {r.uri: r for r in (await client.list_resources()).resources}
        assert set(resources) == {NOTE, "test://pixel"}, sorted(resources)
        assert resources[NOTE].title == "Note" and resources[NOTE].mime_type == "text/plain"
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["greeting://{name}"], templates
        ok("resources and templates listed")

        [pixel] = (await client.read_resource("test://pixel")).contents
        assert pixel.mime_type == "image/png", pixel
        assert base64.b64decode(pixel.blob).startswith(b"\x89PNG"), pixel
        [greeting] = (await client.read_resource("greeting://Ada%20Lovelace")).contents
        assert greeting.text == "Hello, Ada Lovelace!", greeting
        assert greeting.uri == "greeting://Ada%20Lovelace", greeting
        try:
            await client.read_resource("memo://nope")
        except MCPError as error:
            # Resource-not-found is -32002 until 2026-07-28, invalid params from then on.
            code = -32602 if client.protocol_version.startswith("2026") else -32002
            assert error.code == code and "memo://nope" in error.message, error.error
        else:
            raise AssertionError("an unknown resource was read")
        ok("a blob and a template read; an unknown URI is resource-not-found")

        if client.protocol_version.startswith("2026"):
            async with client.listen(resource_subscriptions=[NOTE]) as subscription:
                await client.call_tool("write_note", {"text": "from python"})
                with anyio.fail_after(10):
                    async for event in subscription:
                        assert event.uri == NOTE, event
                        break
        else:
            await client.subscribe_resource(NOTE)
            await client.call_tool("write_note", {"text": "from python"})
            with anyio.fail_after(10):
                while not updated:
                    await anyio.sleep(0.01)
            await client.unsubscribe_resource(NOTE)
            assert updated == [NOTE], updated
        [note] = (await client.read_resource(NOTE)).contents
        assert note.text == "from python", note
        ok("a subscribed resource's update is heard and read")

        if not client.protocol_version.startswith("2026"):
            await client.set_logging_level("warning")
        chatted = await client.call_tool("chatty", {})
        assert text_of(chatted) == "logged", chatted
        with anyio.fail_after(10):
            while len(logs) < 2:
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        assert logs == [
            ("warning", "aleph_tools_tests::mcp_tools", {"count": 2, "message": "two"}),
            ("error", "chatty", {"count": 3}),
        ], logs
        ok("log messages at the level asked for, from tracing and from the tool")

        answers.append(types.ElicitResult(action="accept", content={"name": "Ada", "plan": "pro"}))
        signed = await client.call_tool("sign_up", {})
        assert text_of(signed) == "welcome Ada: pro plan, newsletter false", signed
        [question] = asked
        assert question.message == "Sign up for the service", question
        form = question.requested_schema
        assert form["properties"]["plan"]["enum"] == ["free", "pro"], form
        assert form["properties"]["name"]["description"] == "Your name", form
        assert form["properties"]["newsletter"] == {
            "type": "boolean", "description": "Send the newsletter", "default": False
        }, form
        assert sorted(form["required"]) == ["name", "plan"], form
        answers.append(types.ElicitResult(action="decline"))
        declined = await client.call_tool("sign_up", {})
        assert text_of(declined) == "not signed up: decline", declined
        ok("elicitation: a typed form answered by the client, and a refusal")

        answers.append(types.ElicitResult(action="accept", content={"name": "Ada", "plan": "gold"}))
        misfit = await client.call_tool("sign_up", {})
        assert misfit.is_error is True, misfit
        assert "does not fit" in text_of(misfit) and "gold" in text_of(misfit), text_of(misfit)
        ok("elicitation: an answer that does not fit the form is the tool's error")

        poem = await client.call_tool("haiku", {"topic": "rust"})
        assert text_of(poem) == "loopback-model wrote: old pond, a frog", poem
        [request] = sampled
        assert request.system_prompt == "You write haiku.", request
        assert request.max_tokens == 50, request
        assert request.messages[0].role == "user", request
        assert request.messages[0].content.text == "A haiku about rust", request
        ok("sampling: the client's model answers the tool")

        if client.protocol_version.startswith("2026"):
            first = await client.session.call_tool("sign_up", {}, allow_input_required=True)
            assert first.result_type == "input_required", first
            [(key, ask)] = first.input_requests.items()
            assert ask.method == "elicitation/create", ask
            try:
                await client.session.call_tool(
                    "sign_up", {}, input_responses={key: {"action": "cancel"}},
                    request_state="not-a-state",
                )
            except MCPError as error:
                assert error.code == -32602, error.error
                assert "requestState" in error.error.message, error.error
            else:
                raise AssertionError("a made-up requestState was accepted")
            cancelled = await client.session.call_tool(
                "sign_up", {}, input_responses={key: {"action": "cancel"}},
                request_state=first.request_state,
            )
            assert text_of(cancelled) == "not signed up: cancel", cancelled
            ok("input_required rounds: a made-up requestState refused, the real one carries on")

        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        counted = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
        assert text_of(counted) == "counted to 3", counted
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")], seen
        ok("progress notifications")

        counted = await client.call_tool("count_task", {"steps": 3})
        assert text_of(counted) == "counted to 3", counted
        if client.protocol_version.startswith("2026"):
            # The SDK declared the extension: the call became a task, polled to its end.
            [handle] = tasks.handles
            assert handle.status == "working" and handle.poll_interval_ms == 500, handle
            assert tasks.statuses[-1] == ("completed", "step 3 of 3"), tasks.statuses
            # Started, polled and cancelled by hand.
            started = await client.session.call_tool("count_task", {"steps": 400}, allow_claimed=True)
            assert isinstance(started, TaskHandle), started
            working = await poll(client.session, started.task_id, lambda task: task.get("statusMessage"))
            assert working["status"] == "working", working
            ack = await client.session.send_request(CancelTask(params=TaskId(task_id=started.task_id)), ANY)
            assert ack == {"resultType": "complete"}, ack
            ended = await poll(client.session, started.task_id, lambda task: task["status"] != "working")
            assert ended["status"] == "cancelled", ended
            try:
                await client.session.send_request(GetTask(params=TaskId(task_id="made-up")), ANY)
            except MCPError as error:
                assert error.code == -32602 and "no task `made-up`" in error.message, error.error
            else:
                raise AssertionError("a made-up task was found")
            ok("tasks: a call became a task polled to its result; another cancelled; a made-up id refused")
        else:
            # The SDK takes task handles only without the handshake: the call ran at once.
            assert tasks.handles == [], tasks.handles
            ok("tasks: a client with the handshake and no tasks extension gets the result at once")

        if client.protocol_version.startswith("2026"):
            async with client.listen(tools_list_changed=True) as subscription:
                grown = await client.call_tool("grow", {"name": new_tool})
                assert not grown.is_error, grown
                with anyio.fail_after(10):
                    async for _event in subscription:
                        break
        else:
            grown = await client.call_tool("grow", {"name": new_tool})
            assert not grown.is_error, grown
            with anyio.fail_after(10):
                await changed.wait()
        ok("tools/list_changed after a hot add")

        names, _ = await list_all(client, 100)
        assert new_tool in names, sorted(names)
        echoed = await client.call_tool(new_tool, {"text": "hi"})
        assert echoed.structured_content == {"text": "hi"}, echoed
        ok("the added tool is listed and answers")

    print(f"passed: {len(CHECKS)}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdio", nargs="+")
    parser.add_argument("--url")
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--new-tool", default="echo_from_python")
    args = parser.parse_args()
    if args.stdio:
        server = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
    else:
        server = args.url
    anyio.run(run, server, args.mode, args.new_tool)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # report the first failed check and fail
        print(f"FAILED after {len(CHECKS)} checks: {error!r}", file=sys.stderr, flush=True)
        raise
