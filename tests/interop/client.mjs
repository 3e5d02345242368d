// An MCP client written with the official TypeScript SDK, run against aleph-tools' MCP
// server over stdio:
//
//     node client.mjs COMMAND [ARG...]
//
// The SDK parses `tools/list` strictly (one output schema whose root is not an object fails
// the whole list) and checks each structured result against its tool's output schema.
// Prints `ok: …` for each check and `passed: N` at the end; exits non-zero at the first
// failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ResultSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const checks = [];
const ok = (name) => {
  checks.push(name);
  console.log(`ok: ${name}`);
};
const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

// Every tool, page by page; checks the pages are full but for the last, in name order.
const listAll = async (client, pageSize) => {
  const tools = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    pages += 1;
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor !== undefined) assert.equal(page.tools.length, pageSize);
  } while (cursor !== undefined);
  const names = tools.map((tool) => tool.name);
  assert.deepEqual(names, [...names].sort());
  assert.equal(new Set(names).size, names.length);
  return { tools, pages };
};

const [command, ...args] = process.argv.slice(2);
const client = new Client(
  { name: "aleph-tools-interop", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
const forms = [];
client.setRequestHandler(ElicitRequestSchema, ({ params }) => {
  forms.push(params);
  return { action: "accept", content: { name: "Grace", plan: "free", newsletter: true } };
});
client.setRequestHandler(CreateMessageRequestSchema, ({ params }) => ({
  role: "assistant",
  content: { type: "text", text: `${params.messages.length} message, ${params.maxTokens} tokens` },
  model: "node-model",
}));
let changed;
const listChanged = new Promise((resolve) => (changed = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) =>
  logs.push([params.level, params.logger, params.data]),
);
let noteUpdated;
const updated = new Promise((resolve) => (noteUpdated = resolve));
client.setNotificationHandler(ResourceUpdatedNotificationSchema, ({ params }) => noteUpdated(params.uri));

try {
  await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

  const { tools, pages } = await listAll(client, 100);
  assert.equal(pages, 3);
  const listed = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  for (const name of ["add", "get_weather", "fail", "slow", "grow", "explode", "draw", "echo_249"]) {
    assert.ok(listed[name], `${name} is listed`);
  }
  for (const tool of tools.filter((tool) => tool.outputSchema)) {
    assert.equal(tool.outputSchema.type, "object", `${tool.name}'s output schema`);
  }
  ok("tools/list in three pages, parsed, every output schema an object");

  const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  assert.notEqual(added.isError, true);
  assert.equal(textOf(added), "5");
  assert.deepEqual(added.structuredContent, { result: 5 });
  ok("structured content of a wrapped output, checked by the SDK");

  const weather = await client.callTool({ name: "get_weather", arguments: { city: "Oslo" } });
  assert.deepEqual(weather.structuredContent, { city: "Oslo", celsius: 4.0 });
  ok("structured content of an object output, checked by the SDK");

  const failed = await client.callTool({ name: "fail", arguments: { message: "no luck" } });
  assert.equal(failed.isError, true);
  assert.match(textOf(failed), /no luck/);
  ok("a failing tool as isError");

  const exploded = await client.callTool({ name: "explode", arguments: {} });
  assert.equal(exploded.isError, true);
  ok("a panicking tool as isError");

  const invalid = await client.callTool({ name: "add", arguments: { a: "two", b: 3 } });
  assert.equal(invalid.isError, true);
  assert.match(textOf(invalid), /\/a/);
  ok("invalid arguments named by pointer");

  assert.equal(listed.draw.title, "Pixel painter");
  assert.deepEqual(listed.draw.icons, [{ src: "https://example.com/brush.svg" }]);
  assert.deepEqual(listed.draw._meta, { "example.com/preview": true });
  ok("title, icons and _meta listed");

  const drawn = await client.callTool({ name: "draw", arguments: { color: "red" } });
  assert.deepEqual(drawn.content.map((block) => block.type), ["text", "image", "resource_link"]);
  assert.equal(drawn.content[1].mimeType, "image/png");
  assert.ok(Buffer.from(drawn.content[1].data, "base64").subarray(0, 4).equals(Buffer.from("\x89PNG", "latin1")));
  ok("image and resource link blocks");

  await assert.rejects(
    client.callTool({ name: "ad", arguments: { a: 1, b: 2 } }),
    (error) => error.code === -32602 && /unknown tool `ad`.*`add`/s.test(error.message),
  );
  ok("unknown tool as a protocol error naming the closest tool");

  const { prompts } = await client.listPrompts();
  const review = prompts.find((prompt) => prompt.name === "review");
  assert.equal(review.title, "Code review");
  assert.deepEqual(review.arguments.map((a) => [a.name, a.required]), [["diff", true], ["focus", false]]);
  const got = await client.getPrompt({ name: "review", arguments: { diff: "-a\n+b" } });
  assert.deepEqual(got.messages.map((m) => m.role), ["user", "assistant"]);
  assert.equal(got.messages[0].content.text, "Review this diff for correctness:\n-a\n+b");
  await assert.rejects(client.getPrompt({ name: "reveiw" }), (error) => error.code === -32602 && /`review`/.test(error.message));
  ok("a prompt listed and fetched; an unknown prompt suggests the right one");

  const { resources } = await client.listResources();
  assert.deepEqual(resources.map((r) => r.uri).sort(), ["memo://note", "test://pixel"]);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ["greeting://{name}"]);
  const pixel = (await client.readResource({ uri: "test://pixel" })).contents[0];
  assert.ok(Buffer.from(pixel.blob, "base64").subarray(0, 4).equals(Buffer.from("\x89PNG", "latin1")));
  const greeting = (await client.readResource({ uri: "greeting://Grace" })).contents[0];
  assert.equal(greeting.text, "Hello, Grace!");
  await assert.rejects(client.readResource({ uri: "memo://nope" }), (error) => error.code === -32002);
  await client.subscribeResource({ uri: "memo://note" });
  await client.callTool({ name: "write_note", arguments: { text: "from node" } });
  assert.equal(await updated, "memo://note");
  assert.equal((await client.readResource({ uri: "memo://note" })).contents[0].text, "from node");
  ok("resources listed, read from a template, subscribed and updated");

  await client.setLoggingLevel("error");
  await client.callTool({ name: "chatty", arguments: {} });
  // As with progress, the last notification may be handled after the result.
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(logs, [["error", "chatty", { count: 3 }]]);
  ok("log messages at the level set");

  const signed = await client.callTool({ name: "sign_up", arguments: {} });
  assert.equal(textOf(signed), "welcome Grace: free plan, newsletter true");
  assert.equal(forms.length, 1);
  assert.deepEqual(forms[0].requestedSchema.properties.plan.enum, ["free", "pro"]);
  const poem = await client.callTool({ name: "haiku", arguments: { topic: "rain" } });
  assert.equal(textOf(poem), "node-model wrote: 1 message, 50 tokens");
  ok("elicitation and sampling answered by the client");

  const steps = [];
  const slow = await client.callTool({ name: "slow", arguments: { steps: 3 } }, undefined, {
    onprogress: (progress) => steps.push(progress.progress),
  });
  assert.equal(textOf(slow), "counted to 3");
  // The SDK runs notification handlers a microtask later but settles a response at once,
  // so the last notification, read in the same chunk as the result, can miss its handler.
  assert.deepEqual(steps, [1, 2, 3].slice(0, steps.length));
  assert.ok(steps.length >= 2, `progress seen: ${steps}`);
  ok("progress notifications in order");

  // Tasks (SEP-2663): a second client declares the extension at the handshake. The SDK has
  // no calls of its own for this version of tasks, so its generic request drives them.
  const tasker = new Client(
    { name: "aleph-tools-interop-tasks", version: "1.0.0" },
    { capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } },
  );
  await tasker.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
  const request = (method, params) => tasker.request({ method, params }, ResultSchema);
  const poll = async (taskId, until) => {
    for (;;) {
      const task = await request("tasks/get", { taskId });
      assert.equal(task.resultType, "complete");
      if (until(task)) return task;
      await new Promise((resolve) => setTimeout(resolve, task.pollIntervalMs));
    }
  };
  const handle = await request("tools/call", { name: "count_task", arguments: { steps: 3 } });
  assert.equal(handle.resultType, "task", JSON.stringify(handle));
  assert.equal(handle.status, "working");
  const done = await poll(handle.taskId, (task) => task.status !== "working");
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.equal(textOf(done.result), "counted to 3");
  const long = await request("tools/call", { name: "count_task", arguments: { steps: 400 } });
  await poll(long.taskId, (task) => task.statusMessage !== undefined);
  assert.deepEqual(await request("tasks/cancel", { taskId: long.taskId }), { resultType: "complete" });
  const cancelled = await poll(long.taskId, (task) => task.status !== "working");
  assert.equal(cancelled.status, "cancelled", JSON.stringify(cancelled));
  await assert.rejects(request("tasks/get", { taskId: "made-up" }), (error) => error.code === -32602);
  await tasker.close();
  // The first client did not declare the extension: the same tool answers at once.
  assert.equal(textOf(await client.callTool({ name: "count_task", arguments: { steps: 1 } })), "counted to 1");
  ok("tasks: started, polled to the result, cancelled; a client without the extension waits");

  await client.callTool({ name: "grow", arguments: { name: "sprout" } });
  await listChanged;
  const after = (await listAll(client, 100)).tools.map((tool) => tool.name);
  assert.ok(after.includes("sprout"), after.join(", "));
  const sprout = await client.callTool({ name: "sprout", arguments: { text: "hi" } });
  assert.notEqual(sprout.isError, true);
  ok("list_changed after a hot add, and the new tool called");

  await client.close();
  console.log(`passed: ${checks.length}`);
} catch (error) {
  console.error(`FAILED after ${checks.length} checks:`, error);
  process.exit(1);
}
