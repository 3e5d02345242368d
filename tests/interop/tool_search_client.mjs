// An MCP client written with the official TypeScript SDK, run against
// `aleph-tools serve --builtin --defer 'file_*' --yes --allowed-path DIR`, where DIR holds
// `notes.txt` (`- tea`):
//
//     node tool_search_client.mjs COMMAND [ARG...]
//
// Checks that the deferred file tools are not listed, that `tool_search` finds one and
// `call_tool` runs it. Prints `ok: …` for each check and `passed: N` at the end; exits
// non-zero at the first failure.
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
const client = new Client({ name: "tool-search-check", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

const { tools } = await client.listTools();
const listed = tools.map((tool) => tool.name);
assert.ok(listed.includes("tool_search") && listed.includes("call_tool"), listed.join());
assert.ok(!listed.some((name) => name.startsWith("file_")), listed.join());
ok("deferred tools are not listed; tool_search and call_tool are");

const found = await client.callTool({ name: "tool_search", arguments: { query: "list the files in a folder" } });
assert.ok(!found.isError, textOf(found));
const names = found.structuredContent.tools.map((tool) => tool.name);
assert.ok(names.includes("file_list"), names.join());
ok("tool_search finds file_list by words");

const listing = await client.callTool({ name: "call_tool", arguments: { name: "file_list", arguments: {} } });
assert.ok(!listing.isError, textOf(listing));
const paths = listing.structuredContent.entries.map((entry) => entry.path);
assert.deepEqual(paths, ["notes.txt"]);
ok("call_tool runs the found tool");

const refused = await client.callTool({ name: "call_tool", arguments: { name: "call_tool", arguments: {} } });
assert.ok(refused.isError, textOf(refused));
ok("call_tool does not call itself");

await client.close();
console.log(`passed: ${checks.length}`);
