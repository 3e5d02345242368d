// Bearer-token auth of aleph-tools' HTTP MCP server, checked with the official TypeScript
// SDK:
//
//     node auth_client.mjs URL
//
// The server is the one `auth_client.py` describes (`tests/tests/mcp_auth.rs`). Prints
// `ok: …` for each check and `passed: N` at the end; exits non-zero at the first failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const checks = [];
const ok = (name) => {
  checks.push(name);
  console.log(`ok: ${name}`);
};
const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

const url = process.argv[2];
const origin = url.slice(0, url.lastIndexOf("/mcp"));

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "auth-probe", version: "1" },
  },
};
const post = (headers) =>
  fetch(url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(initialize),
  });

const refused = await post({});
assert.equal(refused.status, 401);
const challenge = extractWWWAuthenticateParams(refused);
assert.equal(
  challenge.resourceMetadataUrl?.href,
  `${origin}/.well-known/oauth-protected-resource/mcp`,
);
assert.equal(challenge.scope, "tools:call");
ok("a request without a token is refused with 401 and a challenge the SDK reads");

const metadata = await discoverOAuthProtectedResourceMetadata(url);
assert.equal(metadata.resource, url);
assert.deepEqual(metadata.authorization_servers, ["https://auth.example.com"]);
assert.deepEqual([...metadata.scopes_supported].sort(), ["notes:write", "tools:call"]);
ok("the SDK discovers the protected-resource metadata document");

const wrong = await post({ Authorization: "Bearer nope" });
assert.equal(wrong.status, 401);
assert.equal(extractWWWAuthenticateParams(wrong).error, "invalid_token");
ok("an unknown token gets error=invalid_token");

const connect = async (token) => {
  const client = new Client({ name: "aleph-tools-auth-interop", version: "1.0.0" });
  const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
};

await assert.rejects(connect(undefined), /401|Unauthorized/i);
ok("the SDK client without a token cannot connect");

const names = async (client) => (await client.listTools()).tools.map((tool) => tool.name).sort();

const alice = await connect("alice-token");
const aliceTools = await names(alice);
assert.equal(textOf(await alice.callTool({ name: "whoami", arguments: {} })), "alice: notes:write tools:call");
const wrote = await alice.callTool({ name: "write_note", arguments: { text: "hi" } });
assert.ok(!wrote.isError, JSON.stringify(wrote));
assert.equal(textOf(wrote), "alice wrote: hi");
await alice.close();
ok("a call with a token runs as its identity, its scopes granted");

const bob = await connect("bob-token");
const bobTools = await names(bob);
const denied = await bob.callTool({ name: "write_note", arguments: { text: "hi" } });
assert.ok(denied.isError && textOf(denied).includes("notes:write"), JSON.stringify(denied));
await bob.close();
ok("another token is refused what its scopes do not allow");

assert.ok(aliceTools.includes("write_note"), JSON.stringify(aliceTools));
assert.deepEqual(bobTools, aliceTools.filter((name) => name !== "write_note"));
ok("each identity is listed only the tools its scopes let it call");

console.log(`passed: ${checks.length}`);
