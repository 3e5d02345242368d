// Replicas of aleph-tools' HTTP server behind a load balancer, driven with the official
// TypeScript SDK:
//
//     node replicas_client.mjs URL TOKEN
//
// The replicas are those `replicas_client.py` describes (`aleph-tools-cli/tests/cli/replicas.rs`):
// they share sessions and tasks through Redis, and the balancer sends each request to the
// next one. Prints `ok: …` for each check and `passed: N` at the end; exits non-zero at the
// first failure.
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

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "replicas-ts", version: "1.0.0" });
await client.connect(transport);
assert.ok(transport.sessionId, "the server opened a session");

const { tools } = await client.listTools();
const names = tools.map((tool) => tool.name);
assert.ok(names.includes("echo") && names.includes("wait"), names.join(", "));
for (let n = 0; n < 12; n += 1) {
  const result = await client.callTool({ name: "echo", arguments: { text: `call ${n}` } });
  assert.ok(!result.isError, JSON.stringify(result));
  assert.match(textOf(result), new RegExp(`call ${n}`));
}
ok(`one session, opened through the balancer, served by every replica (${transport.sessionId})`);

await client.close();
console.log(`passed: ${checks.length}`);
