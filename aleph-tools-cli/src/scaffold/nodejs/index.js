// @ts-check
// The {{id}} plugin: a Node.js program the host starts and talks to over stdin and stdout,
// through @aleph/plugin-sdk. Each tool is a function keyed by its name in `tools`; the
// manifest, aleph_plugin.toml, declares it with its description and its input schema.
import { createServer, ToolError } from "@aleph/plugin-sdk";

/**
 * `greet`: a greeting for someone.
 *
 * @param {{ name: string, shout?: boolean }} args the call's arguments, already checked
 *   against the manifest's `input_schema`
 * @param {import("@aleph/plugin-sdk").CallContext} ctx the call's signal, progress and log
 */
async function greet({ name, shout = false }, ctx) {
  if (name.trim() === "") {
    // What a handler throws is the call's error, which the model reads.
    throw new ToolError("`name` is empty; give the name of someone to greet");
  }
  ctx.log.debug(`greeting ${name}`);
  const greeting = `Hello, ${name}!`;
  return { greeting: shout ? greeting.toUpperCase() : greeting };
}

createServer({
  name: "{{id}}",
  tools: { greet },
}).start();
