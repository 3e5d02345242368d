// The built package as a plugin loads it: by name, through package.json's `exports`, with
// `import` (the ES module build) and with `require` (the CommonJS build). Both give the same
// API, each with its own type declarations. Run `npm run build` (or build.sh) first.
import test from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";

import * as esm from "@aleph/plugin-sdk";

const require = createRequire(import.meta.url);
const cjs = require("@aleph/plugin-sdk");
const root = fileURLToPath(new URL("..", import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

test("import loads the ES module build and require the CommonJS one", () => {
  assert.equal(fileURLToPath(import.meta.resolve("@aleph/plugin-sdk")), join(root, "dist/esm/index.js"));
  assert.equal(require.resolve("@aleph/plugin-sdk"), join(root, "dist/cjs/index.js"));
  // A CommonJS module imported from an ES module would show up as a `default` export.
  assert.equal("default" in esm, false);
  for (const [dir, type] of [
    ["dist/esm", "module"],
    ["dist/cjs", "commonjs"],
  ]) {
    assert.deepEqual(JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")), { type });
  }
});

test("both builds export the same names, of the same kinds and values", () => {
  const names = Object.keys(esm).sort();
  assert.deepEqual(Object.keys(cjs).sort(), names);
  for (const name of ["createServer", "PluginServer", "ToolError", "ErrorCode", "PROTOCOL_VERSION", "SDK", "VERSION"]) {
    assert.ok(names.includes(name), `\`${name}\` is exported`);
  }
  for (const name of names) {
    assert.equal(typeof cjs[name], typeof esm[name], name);
    if (typeof esm[name] !== "function") assert.deepEqual(cjs[name], esm[name], name);
  }
});

test("the version comes from package.json", () => {
  assert.equal(esm.VERSION, manifest.version);
  assert.equal(esm.SDK, `${manifest.name} ${manifest.version}`);
  assert.equal(cjs.SDK, esm.SDK);
});

test("each build serves the protocol", async () => {
  for (const sdk of [esm, cjs]) {
    const input = new PassThrough();
    const output = new PassThrough();
    sdk.createServer({ name: "both", tools: { hi: () => "hello" } }).start({ input, output });
    const answer = new Promise((resolve) => output.once("data", (line) => resolve(JSON.parse(line))));
    input.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { tool: "hi", arguments: {} } }) + "\n");
    assert.deepEqual(await answer, { jsonrpc: "2.0", id: 1, result: "hello" });
    input.end();
  }
});

test("each build has its type declarations, the same for both", () => {
  for (const condition of ["import", "require"]) {
    const types = manifest.exports["."][condition].types;
    const text = readFileSync(join(root, types), "utf8");
    assert.match(text, /export declare function createServer\(options: ServerOptions\): PluginServer;/, types);
  }
  const declarations = (dir) =>
    readdirSync(join(root, dir))
      .filter((file) => file.endsWith(".d.ts"))
      .sort();
  assert.deepEqual(declarations("dist/esm"), declarations("dist/cjs"));
  for (const file of declarations("dist/esm")) {
    assert.equal(
      readFileSync(join(root, "dist/esm", file), "utf8"),
      readFileSync(join(root, "dist/cjs", file), "utf8"),
      file,
    );
  }
  assert.equal(manifest.types, "./dist/cjs/index.d.ts");
  assert.equal(manifest.main, "./dist/cjs/index.js");
});
