// An MCP client written with the official TypeScript SDK, run against
// `aleph-tools serve --builtin --code-mode --yes --allowed-path DIR`, where DIR holds
// `notes/todo.md` (`- tea`):
//
//     node code_mode_client.mjs COMMAND [ARG...]
//
// Checks that `code` is listed with the typed API of the tools open to code, that a script
// calls three of them in one call, and that a tool not open to code is refused to it.
// Prints `ok: …` for each check and `passed: N` at the end; exits non-zero at the first
// failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const checks = [];
const ok = (name) => {
  checks.push(name);
  console.log(`ok: ${name}`);
};
const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "code-mode-check", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

const { tools } = await client.listTools();
const code = tools.find((tool) => tool.name === "code");
assert.ok(code, tools.map((tool) => tool.name).join());
assert.ok(code.description.includes("file_read(args: {"), code.description);
ok("code is listed, declaring the tools open to code");

const script = `
  const listing = await tools.file_list({ path: 'notes' });
  const todo = await tools.file_read({ path: 'notes/todo.md' });
  const found = await tools.file_search({ query: 'tea' });
  return { files: listing.entries.length, todo: todo.content, hits: found.hits.length };
`;
const ran = await client.callTool({ name: "code", arguments: { code: script } });
assert.ok(!ran.isError, textOf(ran));
assert.deepEqual(ran.structuredContent.value, { files: 1, todo: "- tea\n", hits: 1 });
assert.equal(ran.structuredContent.tool_calls, 3);
ok("a script calls three tools in one call");

const refused = await client.callTool({
  name: "code",
  arguments: { code: "return await tools.bash({ command: 'id' })" },
});
assert.ok(refused.isError, textOf(refused));
ok("a tool not open to code is refused to a script");

await client.close();
console.log(`passed: ${checks.length}`);
