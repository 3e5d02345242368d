// The SDK's own tests: the protocol spoken through in-memory streams, and one real process.
const test = require("node:test");
const assert = require("node:assert/strict");
const { PassThrough } = require("node:stream");
const { spawn } = require("node:child_process");
const path = require("node:path");
const { createServer, PROTOCOL_VERSION, ErrorCode, ToolError } = require("..");

/** Starts `options` on in-memory streams; `ask` sends a request and resolves with the answer. */
function serve(options) {
  const input = new PassThrough();
  const output = new PassThrough();
  const waiting = new Map();
  const notifications = [];
  const stray = [];
  let buffer = "";
  output.on("data", (chunk) => {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      const message = JSON.parse(line);
      if (message.method) notifications.push(message);
      else if (waiting.has(message.id)) {
        waiting.get(message.id)(message);
        waiting.delete(message.id);
      } else stray.push(message);
    }
  });
  createServer(options).start({ input, output });
  let next = 1;
  const ask = (method, params, id = next++) =>
    new Promise((resolve) => {
      waiting.set(id, resolve);
      input.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  const send = (text) => input.write(text + "\n");
  return { ask, send, notifications, stray };
}

const initialize = (extra = {}) => ({
  protocolVersion: PROTOCOL_VERSION,
  plugin: { id: "t", version: "1.0.0" },
  tools: [],
  commands: [],
  hooks: [],
  services: [],
  limits: { maxMessage: 1 << 20 },
  ...extra,
});

test("initialize reports the protocol, missing handlers and schemas", async () => {
  const { ask } = serve({
    name: "t",
    tools: {
      handleAdd: { inputSchema: { type: "object", properties: { a: { type: "number" } } }, handler: (a) => a },
      plain: () => 1,
    },
    commands: { hello: () => "hi" },
  });
  const answer = await ask(
    "initialize",
    initialize({
      tools: [
        { name: "add", handler: "handleAdd" },
        { name: "plain", handler: "plain" },
        { name: "gone", handler: "handleGone" },
      ],
      commands: [{ name: "hello", handler: "hello" }],
      hooks: [{ event: "before_tool_call", kind: "observer", handler: "onBefore" }],
    }),
  );
  assert.equal(answer.result.protocolVersion, PROTOCOL_VERSION);
  assert.deepEqual(answer.result.schemas, { add: { type: "object", properties: { a: { type: "number" } } } });
  assert.equal(answer.result.missing.length, 2);
  assert.match(answer.result.missing[0], /gone.*handleGone/);
  assert.match(answer.result.missing[1], /before_tool_call.*onBefore/);
  assert.match(answer.result.sdk, /@aleph\/plugin-sdk/);
});

test("another protocol version is refused", async () => {
  const { ask } = serve({ name: "t" });
  const answer = await ask("initialize", initialize({ protocolVersion: 99 }));
  assert.equal(answer.error.code, ErrorCode.InvalidParams);
  assert.match(answer.error.message, /99/);
});

test("tools answer with their result, by handler or by name, in any order", async () => {
  const { ask } = serve({
    name: "t",
    tools: {
      slow: async (args) => {
        await new Promise((r) => setTimeout(r, 50));
        return { slow: args.n };
      },
      fast: (args) => ({ fast: args.n }),
      nothing: () => undefined,
    },
  });
  await ask("initialize", initialize());
  const slow = ask("tools/call", { tool: "slow_tool", handler: "slow", arguments: { n: 1 } });
  const fast = ask("tools/call", { tool: "fast", handler: "handleFast", arguments: { n: 2 } });
  const first = await Promise.race([slow.then(() => "slow"), fast.then(() => "fast")]);
  assert.equal(first, "fast");
  assert.deepEqual((await slow).result, { slow: 1 });
  assert.deepEqual((await fast).result, { fast: 2 });
  assert.equal((await ask("tools/call", { tool: "nothing", handler: "nothing", arguments: {} })).result, null);
});

test("thrown errors become the call's error message", async () => {
  const { ask } = serve({
    name: "t",
    tools: {
      fails: () => {
        throw new ToolError("the city is unknown");
      },
      rejects: async () => Promise.reject("plain text"),
    },
  });
  const failed = await ask("tools/call", { tool: "fails", handler: "fails", arguments: {} });
  assert.deepEqual(failed.error, { code: ErrorCode.HandlerFailed, message: "the city is unknown" });
  const rejected = await ask("tools/call", { tool: "rejects", handler: "rejects", arguments: {} });
  assert.equal(rejected.error.message, "plain text");
  const unknown = await ask("tools/call", { tool: "nope", handler: "nope", arguments: {} });
  assert.equal(unknown.error.code, ErrorCode.InvalidParams);
  assert.equal((await ask("resources/list", {})).error.code, ErrorCode.MethodNotFound);
});

test("progress is reported with the call's id, and cancel aborts the handler's signal", async () => {
  let aborted;
  const seen = new Promise((resolve) => (aborted = resolve));
  const { ask, send, notifications, stray } = serve({
    name: "t",
    tools: {
      long: (_args, ctx) =>
        new Promise((resolve) => {
          ctx.progress(1, 3, "first");
          ctx.signal.addEventListener("abort", () => {
            aborted(ctx.signal.reason.message);
            resolve("too late");
          });
        }),
    },
  });
  const call = ask("tools/call", { tool: "long", handler: "long", arguments: {} }, 7);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(notifications[0].params, { id: 7, progress: 1, total: 3, message: "first" });
  send(JSON.stringify({ jsonrpc: "2.0", method: "cancel", params: { id: 7 } }));
  assert.match(await seen, /cancelled/);
  await new Promise((r) => setTimeout(r, 20));
  const answered = await Promise.race([call.then(() => true), Promise.resolve(false)]);
  assert.equal(answered, false, "a cancelled call is not answered");
  assert.deepEqual(stray, []);
});

test("a result over the message limit is an error, not a huge line", async () => {
  const { ask } = serve({ name: "t", tools: { big: () => "x".repeat(2000) } });
  await ask("initialize", initialize({ limits: { maxMessage: 1000 } }));
  const answer = await ask("tools/call", { tool: "big", handler: "big", arguments: {} });
  assert.match(answer.error.message, /more than the 1000 bytes/);
});

test("malformed lines get JSON-RPC errors and the server keeps serving", async () => {
  const { ask, send, stray } = serve({ name: "t", tools: { ok: () => "ok" } });
  send("{not json");
  send(JSON.stringify({ jsonrpc: "2.0", id: 99 }));
  send("[1, 2]");
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(stray[0].error.code, ErrorCode.ParseError);
  assert.equal(stray[1].error.code, ErrorCode.InvalidRequest);
  assert.equal(stray[1].id, 99);
  assert.equal((await ask("tools/call", { tool: "ok", handler: "ok", arguments: {} })).result, "ok");
});

test("commands, hooks and services run by name; shutdown stops started services", async () => {
  const events = [];
  const { ask } = serve({
    name: "t",
    commands: { greet: (input) => `hello ${input.who}` },
    hooks: { onBefore: (context) => ({ seen: context.tool }) },
    services: {
      ticker: {
        start: () => events.push("start"),
        stop: () => events.push("stop"),
      },
    },
  });
  assert.equal((await ask("commands/execute", { command: "greet", handler: "greet", input: { who: "Ada" } })).result, "hello Ada");
  assert.deepEqual((await ask("hooks/run", { event: "before_tool_call", handler: "onBefore", context: { tool: "x" } })).result, { seen: "x" });
  assert.equal((await ask("services/start", { service: "ticker" })).result, null);
  assert.equal((await ask("shutdown", null)).result, null);
  assert.deepEqual(events, ["start", "stop"]);
});

test("routes answer requests: a response as given, any other value as a 200", async () => {
  const { ask } = serve({
    name: "t",
    routes: {
      create: (request) => ({ status: 201, body: { got: request.json, id: request.params.id } }),
      plain: (request) => `hello ${request.query.who}`,
      broken: () => {
        throw new Error("no database");
      },
    },
  });
  const created = await ask("routes/handle", {
    handler: "create",
    request: { method: "POST", path: "/items/7", route: "/items/{id}", params: { id: "7" }, json: { a: 1 } },
  });
  assert.deepEqual(created.result, { status: 201, body: { got: { a: 1 }, id: "7" } });
  const plain = await ask("routes/handle", { handler: "plain", request: { method: "GET", path: "/", query: { who: "Ada" } } });
  assert.deepEqual(plain.result, { status: 200, body: "hello Ada" });
  const broken = await ask("routes/handle", { handler: "broken", request: { method: "GET", path: "/" } });
  assert.equal(broken.error.code, ErrorCode.HandlerFailed);
  assert.equal(broken.error.message, "no database");
  const unknown = await ask("routes/handle", { handler: "nope", request: {} });
  assert.equal(unknown.error.code, ErrorCode.InvalidParams);
  const init = await ask("initialize", initialize({ routes: [{ method: "GET", path: "/x", handler: "gone" }] }));
  assert.match(init.result.missing[0], /route `GET \/x` \(`gone` in `routes`\)/);
});

test("channels receive at any time; providers stream chunks before their answer", async () => {
  let receive = null;
  const { ask, notifications } = serve({
    name: "t",
    channels: {
      connect: (config, ctx) => {
        receive = ctx.receive;
        return { room: config.room };
      },
      send: (message, ctx) => {
        ctx.receive({ text: `echo: ${message.text}` });
        return { sent: true };
      },
    },
    providers: {
      stream: (request, ctx) => {
        for (const word of request.text.split(" ")) ctx.emit(word);
        return null;
      },
    },
  });
  const connected = await ask("channels/call", { channel: "chat", role: "connect", handler: "connect", input: { room: "r" } });
  assert.deepEqual(connected.result, { room: "r" });
  const sent = await ask("channels/call", { channel: "chat", role: "send", handler: "send", input: { text: "hi" } });
  assert.deepEqual(sent.result, { sent: true });
  receive({ text: "later" });
  const streamed = await ask("providers/call", { provider: "m", role: "stream", handler: "stream", input: { text: "a b" } }, 77);
  assert.equal(streamed.result, null);
  const received = notifications.filter((n) => n.method === "channels/receive").map((n) => n.params);
  assert.deepEqual(received, [
    { channel: "chat", message: { text: "echo: hi" } },
    { channel: "chat", message: { text: "later" } },
  ]);
  const chunks = notifications.filter((n) => n.method === "chunk").map((n) => n.params);
  assert.deepEqual(chunks, [{ id: 77, chunk: "a" }, { id: 77, chunk: "b" }]);
  const init = await ask("initialize", initialize({ providers: [{ name: "m", handlers: ["stream", "chat"] }] }));
  assert.deepEqual(init.result.missing, ["provider `m` (`chat` in `providers`)"]);
});

test("a real process keeps console output off stdout and exits when stdin closes", async () => {
  const child = spawn(process.execPath, [path.join(__dirname, "fixtures", "plugin.js")], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: initialize({ tools: [{ name: "echo", handler: "echo" }] }) }) + "\n");
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { tool: "echo", handler: "echo", arguments: { a: 1 } } }) + "\n");
  await new Promise((r) => setTimeout(r, 300));
  child.stdin.end();
  const code = await new Promise((resolve) => child.on("exit", resolve));
  assert.equal(code, 0);
  const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, 2);
  assert.deepEqual(lines[1], { jsonrpc: "2.0", id: 2, result: { echoed: { a: 1 } } });
  assert.match(stderr, /echo called/);
});
