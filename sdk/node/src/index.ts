/**
 * `@aleph/plugin-sdk`: write an aleph-tools plugin as a Node.js program.
 *
 * ```ts
 * import { createServer } from "@aleph/plugin-sdk";
 *
 * createServer({
 *   name: "my-plugin",
 *   tools: {
 *     my_tool: async (args: { input: string }) => ({ result: `Processed: ${args.input}` }),
 *   },
 * }).start();
 * ```
 *
 * The host starts the program, writes JSON-RPC 2.0 requests to its stdin, one per line, and
 * reads the answers from its stdout. This module speaks that protocol: it finds the handler
 * each request names, runs it, and answers with what it returns or the message of what it
 * throws. stdout belongs to the protocol, so `console.log` and friends are sent to stderr,
 * which the host logs.
 */

import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";

import { followProxyVariables } from "./proxy.js";
import { NAME, VERSION } from "./version.js";

// In the sandbox's proxy mode, older Node.js versions send requests through the proxy too.
followProxyVariables();

/** The protocol version this SDK speaks; the host checks it at `initialize`. */
export const PROTOCOL_VERSION = 1;

// The package's version, as its package.json gives it (written into version.ts at build).
export { VERSION };

/** The SDK's name and version, sent to the host at `initialize`: `@aleph/plugin-sdk 0.1.0`. */
export const SDK = `${NAME} ${VERSION}`;

/** JSON-RPC error codes. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  /** The handler threw: the message is the tool's error, shown to the model. */
  HandlerFailed: -32000,
  /** The host cancelled the call. */
  Cancelled: -32001,
} as const;

/** Log levels, as the host's log knows them. */
export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

/** Writes to the host's log, tagged with the plugin's id. */
export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
}

/** What a handler gets beside its arguments. */
export interface CallContext {
  /** The tool, command, hook event or service being run. */
  readonly name: string;
  /**
   * Aborted when the host gives the call up: its timeout passed, or the caller cancelled.
   * Pass it to `fetch` and other APIs that take one; an answer after it aborted is dropped.
   */
  readonly signal: AbortSignal;
  /** Reports how far the call is, as the host shows progress: `progress` of `total`. */
  progress(progress: number, total?: number, message?: string): void;
  /** The host's log. */
  readonly log: Logger;
}

/**
 * Runs a tool, command or hook: gets the arguments (JSON), returns JSON (or a promise of it).
 * What it throws becomes the call's error, with the thrown error's message.
 */
export type Handler<Args = any, Result = unknown> = (
  args: Args,
  context: CallContext,
) => Result | Promise<Result>;

/**
 * What a hook handler is given about a tool call. `after_tool_call` and `on_error` hooks also
 * get the outcome.
 */
export interface HookContext {
  /** `before_tool_call`, `after_tool_call` or `on_error`. */
  readonly event: string;
  /** The tool called. */
  readonly tool: string;
  /** The tool called: `tool` under its short name. */
  readonly toolName: string;
  /** The host's id of the call. */
  readonly call_id: number;
  /** Who calls: `human`, `code_execution`, … */
  readonly caller: string;
  /** The call's arguments; an interceptor may change them and return the context. */
  arguments: Record<string, unknown>;
  /** `arguments` under its short name; changing either one counts. */
  args: Record<string, unknown>;
  /** Whether the call succeeded (after the call). */
  readonly success?: boolean;
  /** The tool's output, or `null` (after the call). */
  readonly result?: unknown;
  /** The error's message, or `null` (after the call). */
  readonly error?: string | null;
  /** How long the call took, in milliseconds (after the call). */
  readonly duration_ms?: number;
  /** `duration_ms` under its short name. */
  readonly duration?: number;
}

/**
 * What a `before_tool_call` interceptor answers: nothing to let the call run as it is; the
 * context it was given, changed or not, to run it with the context's `arguments`;
 * `{ arguments }` to run it with these; `{ block }` to refuse it with that reason. Throwing
 * refuses it too, with the thrown error's message.
 */
export type InterceptorAnswer =
  | HookContext
  | { arguments: Record<string, unknown> }
  | { block: string }
  | null
  | undefined
  | void;

/**
 * A hook: an interceptor, resolver or observer of tool calls, by the manifest's `kind`. An
 * interceptor answers an {@link InterceptorAnswer}; a resolver `null` or the call's output;
 * an observer's answer is ignored.
 */
export type HookHandler = Handler<HookContext, unknown>;

/** A tool with an input schema, for a manifest that gives none. */
export interface ToolSpec<Args = any, Result = unknown> {
  /** JSON Schema of the arguments: an object schema. */
  inputSchema?: Record<string, unknown>;
  /** Runs the tool. */
  handler: Handler<Args, Result>;
}

/** A background service: started and stopped by the host. */
export interface Service {
  /** Starts the service; resolve once it runs. */
  start(context: CallContext): void | Promise<void>;
  /** Stops the service; resolve once it stopped. */
  stop(context: CallContext): void | Promise<void>;
}

/** An HTTP request to one of the plugin's `[[http_routes]]`, as the host passes it on. */
export interface HttpRequest {
  /** `GET`, `POST`, `PUT`, `PATCH` or `DELETE`. */
  method: string;
  /** The path under `/plugins/{id}` as sent (percent-encoded), such as `/notes/42`. */
  path: string;
  /** The manifest's pattern it matched, such as `/notes/{id}`. */
  route: string;
  /** The values of the pattern's `{name}` segments. */
  params: Record<string, string>;
  /** The query string's parameters (the first value of each name). */
  query: Record<string, string>;
  /** The query string as sent. */
  raw_query: string;
  /** The request's headers, names in lowercase, repeated ones joined with `, `. */
  headers: Record<string, string>;
  /** The body as text (absent when it is not UTF-8; then `body_base64` holds it). */
  body?: string;
  /** The body in base64, when it is not UTF-8 text. */
  body_base64?: string;
  /** The body parsed, when the request says it is JSON and it is. */
  json?: unknown;
}

/**
 * What a route handler answers. A handler may also return any other JSON value, which is
 * sent with status 200: a string as text, anything else as JSON.
 */
export interface HttpResponse {
  /** The status code, 100 to 599. */
  status: number;
  /** Response headers. `content-type` defaults to text for a string body, else JSON. */
  headers?: Record<string, string>;
  /** The body: a string is sent as text, any other JSON value as JSON. */
  body?: unknown;
  /** A binary body, in base64, instead of `body`. */
  body_base64?: string;
}

/** Answers an HTTP request to one of the plugin's routes. */
export type RouteHandler = (
  request: HttpRequest,
  context: CallContext,
) => HttpResponse | unknown | Promise<HttpResponse | unknown>;

/** What a channel handler gets beside its input. */
export interface ChannelContext extends CallContext {
  /**
   * Hands the host a message that arrived on this channel (from the platform, a webhook, a
   * poll). Callable at any time, also after the handler returned: keep it from `connect`.
   */
  receive(message: unknown): void;
}

/** What a provider handler gets beside its input. */
export interface ProviderContext extends CallContext {
  /** Sends one piece of a streaming answer to the host, now. */
  emit(chunk: unknown): void;
}

/** A channel's `connect`, `disconnect` or `send` handler. */
export type ChannelHandler = (input: any, context: ChannelContext) => unknown | Promise<unknown>;

/** A provider's `list_models`, `chat`, `stream` or `embed` handler. */
export type ProviderHandler = (input: any, context: ProviderContext) => unknown | Promise<unknown>;

/** What a plugin serves, by name. */
export interface ServerOptions {
  /** The plugin's name, for messages. */
  name: string;
  /**
   * Tools, keyed by the manifest's `handler` for the tool or else the tool's name: a handler,
   * or `{ inputSchema, handler }`.
   */
  tools?: Record<string, Handler | ToolSpec>;
  /** Direct commands, keyed by the manifest's `handler` or the command's name. */
  commands?: Record<string, Handler>;
  /** Hooks, keyed by the manifest's `handler`. */
  hooks?: Record<string, HookHandler>;
  /** Background services, keyed by the service's name. */
  services?: Record<string, Service>;
  /** HTTP route handlers, keyed by the manifest's `handler` for the route. */
  routes?: Record<string, RouteHandler>;
  /** Channel handlers (`connect_handler`, `disconnect_handler`, `send_handler`), by name. */
  channels?: Record<string, ChannelHandler>;
  /** Provider handlers (`list_models_handler`, `chat_handler`, …), by name. */
  providers?: Record<string, ProviderHandler>;
}

/** Where a server reads and writes; the process's stdio unless a test says otherwise. */
export interface Transport {
  input: Readable;
  output: Writable;
}

interface Request {
  jsonrpc: "2.0";
  id?: number | string | null;
  method: string;
  params?: any;
}

interface Declared {
  name: string;
  handler: string;
}

/** The error a handler can throw to fail a call with a message and nothing more. */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}

/** A plugin's server: call `start()` once its handlers are in place. */
export class PluginServer {
  readonly options: ServerOptions;
  readonly log: Logger;
  #output: Writable | null = null;
  #maxMessage = 16 * 1024 * 1024;
  #running = new Map<string | number, AbortController>();
  #servicesStarted = new Set<string>();

  constructor(options: ServerOptions) {
    if (!options || typeof options.name !== "string") {
      throw new TypeError("createServer needs `{ name, tools }`");
    }
    this.options = options;
    this.log = {
      error: (m) => this.#send({ jsonrpc: "2.0", method: "log", params: { level: "error", message: m } }),
      warn: (m) => this.#send({ jsonrpc: "2.0", method: "log", params: { level: "warn", message: m } }),
      info: (m) => this.#send({ jsonrpc: "2.0", method: "log", params: { level: "info", message: m } }),
      debug: (m) => this.#send({ jsonrpc: "2.0", method: "log", params: { level: "debug", message: m } }),
    };
  }

  /**
   * Serves requests from stdin until it closes, then exits. `console.log`, `info` and
   * `debug` write to stderr from here on.
   */
  start(transport?: Transport): void {
    const input = transport?.input ?? process.stdin;
    this.#output = transport?.output ?? process.stdout;
    if (!transport) {
      console.log = console.error;
      console.info = console.error;
      console.debug = console.error;
    }
    const lines = createInterface({ input, crlfDelay: Infinity });
    lines.on("line", (line) => this.#receive(line));
    lines.on("close", () => {
      if (!transport) process.exit(0);
    });
  }

  #receive(line: string): void {
    if (line.trim() === "") return;
    let message: Request;
    try {
      message = JSON.parse(line);
    } catch (error) {
      this.#error(null, ErrorCode.ParseError, `not JSON: ${(error as Error).message}`);
      return;
    }
    if (!message || typeof message !== "object" || typeof message.method !== "string") {
      const id = message && typeof message === "object" ? (message.id ?? null) : null;
      this.#error(id, ErrorCode.InvalidRequest, "a request needs `method`");
      return;
    }
    if (message.id === undefined || message.id === null) {
      this.#notified(message);
      return;
    }
    void this.#serve(message.id, message.method, message.params ?? {});
  }

  #notified(message: Request): void {
    if (message.method === "cancel") {
      this.#running.get(message.params?.id)?.abort(new Error("the host cancelled the call"));
    }
  }

  async #serve(id: number | string, method: string, params: any): Promise<void> {
    switch (method) {
      case "initialize":
        return this.#initialize(id, params);
      case "tools/call": {
        const tool = this.#findTool(params.handler, params.tool);
        if (!tool) {
          return this.#error(id, ErrorCode.InvalidParams, `no tool \`${params.tool}\` in ${this.options.name}`);
        }
        return this.#run(id, params.tool, params.arguments ?? {}, typeof tool === "function" ? tool : tool.handler);
      }
      case "commands/execute": {
        const commands = this.options.commands ?? {};
        const command = own(commands, params.handler) ?? own(commands, params.command);
        if (!command) {
          return this.#error(id, ErrorCode.InvalidParams, `no command \`${params.command}\` in ${this.options.name}`);
        }
        return this.#run(id, params.command, params.input ?? {}, command);
      }
      case "hooks/run": {
        const hook = own(this.options.hooks ?? {}, params.handler);
        if (!hook) {
          return this.#error(id, ErrorCode.InvalidParams, `no hook \`${params.handler}\` in ${this.options.name}`);
        }
        return this.#run(id, params.event, params.context ?? {}, hook);
      }
      case "services/start":
      case "services/stop": {
        const service = own(this.options.services ?? {}, params.service);
        if (!service) {
          return this.#error(id, ErrorCode.InvalidParams, `no service \`${params.service}\` in ${this.options.name}`);
        }
        const starting = method === "services/start";
        return this.#run(id, params.service, {}, async (_args, context) => {
          if (starting) {
            await service.start(context);
            this.#servicesStarted.add(params.service);
          } else {
            this.#servicesStarted.delete(params.service);
            await service.stop(context);
          }
          return null;
        });
      }
      case "routes/handle": {
        const route = own(this.options.routes ?? {}, params.handler);
        if (!route) {
          return this.#error(id, ErrorCode.InvalidParams, `no route \`${params.handler}\` in ${this.options.name}`);
        }
        const request = (params.request ?? {}) as HttpRequest;
        return this.#run(id, `${request.method} ${request.path}`, request, async (args, context) =>
          asResponse(await route(args, context)),
        );
      }
      case "channels/call":
      case "providers/call": {
        const channel = method === "channels/call";
        const record = (channel ? this.options.channels : this.options.providers) ?? {};
        const handler = own(record as Record<string, Handler>, params.handler);
        const adapter = channel ? params.channel : params.provider;
        if (!handler) {
          return this.#error(
            id,
            ErrorCode.InvalidParams,
            `no ${channel ? "channel" : "provider"} handler \`${params.handler}\` in ${this.options.name}`,
          );
        }
        return this.#run(id, `${adapter} ${params.role}`, params.input ?? null, (input, context) =>
          handler(input, {
            ...context,
            receive: (message: unknown) =>
              this.#send({ jsonrpc: "2.0", method: "channels/receive", params: { channel: adapter, message } }),
            emit: (chunk: unknown) => {
              if (!context.signal.aborted) this.#send({ jsonrpc: "2.0", method: "chunk", params: { id, chunk } });
            },
          } as CallContext),
        );
      }
      case "shutdown":
        return this.#shutdown(id);
      default:
        return this.#error(id, ErrorCode.MethodNotFound, `unknown method \`${method}\``);
    }
  }

  #initialize(id: number | string, params: any): void {
    if (params.protocolVersion !== PROTOCOL_VERSION) {
      return this.#error(
        id,
        ErrorCode.InvalidParams,
        `the host speaks plugin protocol ${params.protocolVersion}, and ${SDK} speaks ${PROTOCOL_VERSION}`,
      );
    }
    if (typeof params.limits?.maxMessage === "number") this.#maxMessage = params.limits.maxMessage;
    const missing: string[] = [];
    const schemas: Record<string, unknown> = {};
    for (const tool of (params.tools ?? []) as Declared[]) {
      const found = this.#findTool(tool.handler, tool.name);
      if (!found) missing.push(`tool \`${tool.name}\` (\`${tool.handler}\` in \`tools\`)`);
      else if (typeof found === "object" && found.inputSchema) schemas[tool.name] = found.inputSchema;
    }
    for (const command of (params.commands ?? []) as Declared[]) {
      const commands = this.options.commands ?? {};
      if (!own(commands, command.handler) && !own(commands, command.name)) {
        missing.push(`command \`${command.name}\` (\`${command.handler}\` in \`commands\`)`);
      }
    }
    for (const hook of (params.hooks ?? []) as { event: string; handler: string }[]) {
      if (!own(this.options.hooks ?? {}, hook.handler)) {
        missing.push(`hook \`${hook.event}\` (\`${hook.handler}\` in \`hooks\`)`);
      }
    }
    for (const service of (params.services ?? []) as { name: string }[]) {
      if (!own(this.options.services ?? {}, service.name)) {
        missing.push(`service \`${service.name}\` (\`${service.name}\` in \`services\`)`);
      }
    }
    for (const route of (params.routes ?? []) as { method: string; path: string; handler: string }[]) {
      if (!own(this.options.routes ?? {}, route.handler)) {
        missing.push(`route \`${route.method} ${route.path}\` (\`${route.handler}\` in \`routes\`)`);
      }
    }
    for (const [key, record] of [
      ["channels", this.options.channels ?? {}],
      ["providers", this.options.providers ?? {}],
    ] as const) {
      for (const adapter of (params[key] ?? []) as { name: string; handlers: string[] }[]) {
        for (const handler of adapter.handlers ?? []) {
          if (!own(record as Record<string, unknown>, handler)) {
            missing.push(`${key.slice(0, -1)} \`${adapter.name}\` (\`${handler}\` in \`${key}\`)`);
          }
        }
      }
    }
    this.#result(id, { protocolVersion: PROTOCOL_VERSION, missing, schemas, sdk: SDK });
  }

  #findTool(handler: string, name: string): Handler | ToolSpec | undefined {
    const tools = this.options.tools ?? {};
    return own(tools, handler) ?? own(tools, name);
  }

  async #run(id: number | string, name: string, args: unknown, handler: Handler): Promise<void> {
    const controller = new AbortController();
    this.#running.set(id, controller);
    const context: CallContext = {
      name,
      signal: controller.signal,
      log: this.log,
      progress: (progress, total, message) => {
        if (controller.signal.aborted) return;
        this.#send({ jsonrpc: "2.0", method: "progress", params: { id, progress, total, message } });
      },
    };
    try {
      const result = await handler(args, context);
      if (!controller.signal.aborted) this.#result(id, result === undefined ? null : result);
    } catch (error) {
      if (!controller.signal.aborted) this.#error(id, ErrorCode.HandlerFailed, messageOf(error));
    } finally {
      this.#running.delete(id);
    }
  }

  async #shutdown(id: number | string): Promise<void> {
    for (const controller of this.#running.values()) controller.abort(new Error("the plugin is shutting down"));
    const services = this.options.services ?? {};
    for (const name of [...this.#servicesStarted]) {
      try {
        await services[name].stop({ name, signal: new AbortController().signal, log: this.log, progress: () => {} });
      } catch (error) {
        this.log.warn(`service \`${name}\` failed to stop: ${messageOf(error)}`);
      }
    }
    this.#servicesStarted.clear();
    this.#result(id, null);
  }

  #result(id: number | string, result: unknown): void {
    let line: string;
    try {
      line = JSON.stringify({ jsonrpc: "2.0", id, result });
    } catch (error) {
      return this.#error(id, ErrorCode.HandlerFailed, `the result is not JSON: ${messageOf(error)}`);
    }
    const size = Buffer.byteLength(line);
    if (size >= this.#maxMessage) {
      return this.#error(
        id,
        ErrorCode.HandlerFailed,
        `the result is ${size} bytes, more than the ${this.#maxMessage} bytes a message may have; return less`,
      );
    }
    this.#write(line);
  }

  #error(id: number | string | null, code: number, message: string): void {
    this.#write(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } }));
  }

  #send(message: object): void {
    this.#write(JSON.stringify(message));
  }

  #write(line: string): void {
    (this.#output ?? process.stdout).write(line + "\n");
  }
}

/** A plugin server serving `options`'s handlers; call `start()` on it. */
export function createServer(options: ServerOptions): PluginServer {
  return new PluginServer(options);
}

/** A route handler's answer as a response: one with a numeric `status` as it is, else a 200. */
function asResponse(answer: unknown): HttpResponse {
  if (answer !== null && typeof answer === "object" && typeof (answer as HttpResponse).status === "number") {
    return answer as HttpResponse;
  }
  return { status: 200, body: answer === undefined ? null : answer };
}

function own<T>(record: Record<string, T>, key: unknown): T | undefined {
  return typeof key === "string" && Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
