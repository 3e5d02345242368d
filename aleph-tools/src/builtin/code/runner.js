// Runs one code-mode script: reads {code, tools, valueLimit} from the first line of standard
// input, gives the script a `tools` object whose methods ask the host to call a tool, and
// speaks one JSON object per line on standard output:
//   {"t":"call","id":1,"tool":"name","args":{...}}   a tool call; the host answers on stdin
//   {"t":"log","text":"..."}                          what the script printed
//   {"t":"done","value":...}                          the script returned (value left out: undefined)
//   {"t":"error","message":"...","line":3}            the script threw
// The host treats every line as untrusted: the script can write here too. Each message starts
// on a line of its own (a newline before it), so what the script wrote without ending its
// line cannot swallow it.
'use strict';

const vm = require('node:vm');
const util = require('node:util');
const readline = require('node:readline');

const stdout = process.stdout;
const write = stdout.write.bind(stdout);
// Strings as the host reads them: a lone surrogate (half of a character) becomes U+FFFD.
const wellFormed = (_key, value) => (typeof value === 'string' ? value.toWellFormed() : value);
const toJson = (value) => JSON.stringify(value, wellFormed);
const send = (message) => write('\n' + toJson(message) + '\n');

const pending = new Map();
let nextId = 1;
let valueLimit = 1 << 20;

class ToolError extends Error {
  constructor(tool, message) {
    super(message);
    this.name = 'ToolError';
    this.tool = tool;
  }
}

function callTool(name, args) {
  if (args === undefined) args = {};
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return Promise.reject(
      new TypeError(`tools.${name} takes one object of named arguments, as in tools.${name}({ ... })`),
    );
  }
  let json;
  try {
    json = toJson(args);
  } catch (error) {
    return Promise.reject(new TypeError(`the arguments of tools.${name} cannot be sent as JSON: ${error.message}`));
  }
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { name, resolve, reject });
    write(`\n{"t":"call","id":${id},"tool":${toJson(name)},"args":${json}}\n`);
  });
}

function makeTools(names) {
  const own = Object.create(null);
  for (const name of names) own[name] = (args) => callTool(name, args);
  // A name that is not open to code still goes to the host, which refuses it with the
  // reason and the closest names.
  return new Proxy(own, {
    get(target, key) {
      if (typeof key !== 'string') return undefined;
      if (key in target) return target[key];
      if (key === 'then' || key === 'toJSON') return undefined;
      return (args) => callTool(key, args);
    },
    set() {
      return false;
    },
    defineProperty() {
      return false;
    },
    deleteProperty() {
      return false;
    },
  });
}

function log(...args) {
  send({ t: 'log', text: util.format(...args) + '\n' });
}
for (const method of ['log', 'info', 'debug', 'warn', 'error', 'trace']) {
  console[method] = log;
}
console.dir = (value) => log(util.inspect(value));
console.table = (value) => log(util.inspect(value));
stdout.write = (chunk, encoding, callback) => {
  send({ t: 'log', text: typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8') });
  if (typeof encoding === 'function') encoding();
  else if (typeof callback === 'function') callback();
  return true;
};

/** The script's line an error points at, when its stack names one. */
function lineOf(error) {
  const stack = error && typeof error.stack === 'string' ? error.stack : '';
  const found = /script\.js:(\d+)/.exec(stack);
  return found ? Number(found[1]) : undefined;
}

function fail(error) {
  const message =
    error instanceof Error ? `${error.name}: ${error.message}` : `a value was thrown: ${util.inspect(error)}`;
  send({ t: 'error', message, line: lineOf(error) });
}

process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

function start(request) {
  valueLimit = request.valueLimit ?? valueLimit;
  globalThis.tools = makeTools(request.tools);
  globalThis.ToolError = ToolError;
  globalThis.require = require;
  let script;
  try {
    script = new vm.Script(`(async () => {\n${request.code}\n})()`, {
      filename: 'script.js',
      lineOffset: -1,
    });
  } catch (error) {
    return fail(error);
  }
  Promise.resolve()
    .then(() => script.runInThisContext())
    .then((value) => {
      if (value === undefined) return send({ t: 'done' });
      let json;
      try {
        json = toJson(value);
      } catch (error) {
        return fail(new TypeError(`the returned value cannot be turned into JSON: ${error.message}`));
      }
      if (json === undefined) return send({ t: 'done' });
      if (json.length > valueLimit) {
        return fail(
          new RangeError(
            `the returned value is ${json.length} characters of JSON, more than the ${valueLimit} allowed; return a summary`,
          ),
        );
      }
      write(`\n{"t":"done","value":${json}}\n`);
    }, fail);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let started = false;
lines.on('line', (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (!started) {
    started = true;
    return start(message);
  }
  const call = pending.get(message.id);
  if (!call) return;
  pending.delete(message.id);
  if (message.ok) call.resolve(message.value);
  else call.reject(new ToolError(call.name, message.error));
});
