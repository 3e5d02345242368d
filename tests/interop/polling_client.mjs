// SSE polling of aleph-tools' HTTP MCP server, checked with the official TypeScript SDK:
//
//     node polling_client.mjs URL
//
// The server is the one `polling_client.py` describes (`tests/tests/suite/mcp_polling.rs`):
// it closes each request's event stream after 300 ms, and the SDK reconnects with
// `Last-Event-ID` by itself. Prints `ok: …` for each check and `passed: N` at the end; exits
// non-zero at the first failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const checks = [];
const ok = (name) => {
  checks.push(name);
  console.log(`ok: ${name}`);
};
const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

const client = new Client({ name: "polling-probe", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));

const steps = [];
const result = await client.callTool({ name: "slow", arguments: { steps: 20 } }, undefined, {
  onprogress: (progress) => steps.push(progress.progress),
});
assert.equal(textOf(result), "counted to 20");
assert.deepEqual([...new Set(steps)].sort((a, b) => a - b), [...Array(20).keys()].map((n) => n + 1));
ok("a call longer than its stream is answered after the SDK reconnects, every step heard");

const counts = [8, 12, 16];
const answers = await Promise.all(
  counts.map((n) => client.callTool({ name: "slow", arguments: { steps: n } })),
);
assert.deepEqual(answers.map(textOf), counts.map((n) => `counted to ${n}`));
ok("three cut calls at once each get their own answer");

await client.close();
console.log(`passed: ${checks.length}`);
