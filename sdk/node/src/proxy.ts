/**
 * `NODE_USE_ENV_PROXY` for the Node.js versions that do not read it (before 22.21, and 23).
 *
 * A plugin granted network hosts runs in an OS sandbox whose only way out is an HTTP(S)
 * proxy on the sandbox's loopback; the host sets `HTTP_PROXY`, `HTTPS_PROXY` and
 * `NODE_USE_ENV_PROXY=1`. Node.js 22.21 and 24 onward then send `fetch` and `http`/`https`
 * requests through it by themselves. On older versions this module does the same when it is
 * loaded: `fetch` gets a dispatcher, and `http.globalAgent` and `https.globalAgent` become
 * agents, that open each connection as a `CONNECT` tunnel through the proxy (and TLS inside
 * it for `https:`). A refused tunnel fails the request with the proxy's reason. Connections
 * made some other way reach nothing: the sandbox has no other route out.
 */

import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import type { Duplex } from "node:stream";
import * as tls from "node:tls";

/** Where undici, and so `fetch`, keeps its global dispatcher, across versions. */
const DISPATCHER = Symbol.for("undici.globalDispatcher.1");

/** Whether this Node.js reads `NODE_USE_ENV_PROXY` itself. */
function readsProxyVariables(version: string): boolean {
  const [major, minor] = version.split(".").map(Number);
  return major >= 24 || (major === 22 && minor >= 21);
}

/** Sends this process's requests through the proxy the environment names, where Node.js does not. */
export function followProxyVariables(): void {
  const named = process.env.HTTPS_PROXY || process.env.HTTP_PROXY;
  if (process.env.NODE_USE_ENV_PROXY !== "1" || !named || readsProxyVariables(process.versions.node)) {
    return;
  }
  const proxy = new URL(named);
  useForHttp(proxy);
  useForFetch(proxy);
}

/** Opens a `CONNECT` tunnel through `proxy` to `host:port`. */
export function tunnel(proxy: URL, host: string, port: number): Promise<net.Socket> {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  const authority = net.isIPv6(bare) ? `[${bare}]:${port}` : `${bare}:${port}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(proxy.port) || 80, proxy.hostname.replace(/^\[(.*)\]$/, "$1"));
    let head = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > 65536) fail(new Error("the proxy's answer has no end"));
        return;
      }
      const rest = head.subarray(end + 4);
      // Bytes past the answer are kept for the reader (a stream left flowing with no
      // listener would drop them); a proxy sends none before the far end speaks.
      if (rest.length > 0) socket.pause();
      socket.off("data", onData);
      socket.off("error", fail);
      const status = head.subarray(0, head.indexOf("\r\n")).toString();
      if (/^HTTP\/1\.[01] 200/.test(status)) {
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
      } else {
        const reason = rest.toString().trim();
        fail(new Error(reason || `the proxy answered ${status}`));
      }
    };
    socket.once("error", fail);
    socket.on("data", onData);
    socket.once("connect", () => {
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    });
  });
}

/** TLS to `host` over `socket`, with the name for SNI unless `host` is an address. */
function secure(socket: net.Socket, host: string, options: tls.ConnectionOptions = {}): Promise<tls.TLSSocket> {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  return new Promise((resolve, reject) => {
    // `host` is what the certificate is checked against (without it, `localhost`).
    const wrapped = tls.connect({
      ...options,
      socket,
      host: bare,
      servername: net.isIP(bare) ? undefined : bare,
    });
    wrapped.once("secureConnect", () => resolve(wrapped));
    wrapped.once("error", reject);
  });
}

type Created = (error: Error | null, socket: Duplex) => void;

function useForHttp(proxy: URL): void {
  const connect = (options: http.ClientRequestArgs, done?: Created, encrypted?: tls.ConnectionOptions) => {
    const host = options.hostname || options.host || "localhost";
    const port = Number(options.port) || (encrypted ? 443 : 80);
    tunnel(proxy, host, port)
      .then((socket): net.Socket | Promise<net.Socket> => (encrypted ? secure(socket, host, encrypted) : socket))
      .then(
        (socket) => done?.(null, socket),
        // Node's agents take no socket with an error.
        (error: Error) => (done as ((error: Error) => void) | undefined)?.(error),
      );
  };
  // An agent whose `createConnection` returns nothing waits for its callback.
  class PlainTunnel extends http.Agent {
    createConnection(options: http.ClientRequestArgs, done?: Created): undefined {
      connect(options, done);
      return undefined;
    }
  }
  class SecureTunnel extends https.Agent {
    createConnection(options: http.ClientRequestArgs, done?: Created): undefined {
      connect(options, done, options as tls.ConnectionOptions);
      return undefined;
    }
  }
  (http as { globalAgent: http.Agent }).globalAgent = new PlainTunnel({ keepAlive: true });
  (https as { globalAgent: https.Agent }).globalAgent = new SecureTunnel({ keepAlive: true });
}

interface ConnectOptions {
  hostname: string;
  protocol: string;
  port: string | number;
  servername?: string;
}

type Connector = (options: ConnectOptions, done: (error: Error | null, socket: net.Socket | null) => void) => void;

function useForFetch(proxy: URL): void {
  // Making a `Headers` loads the `fetch` implementation, which sets its global dispatcher:
  // an undici `Agent`, whose class takes a connector.
  new Headers();
  const current = (globalThis as Record<symbol, unknown>)[DISPATCHER];
  if (typeof current !== "object" || current === null) return;
  const Agent = current.constructor as new (options: { connect: Connector }) => unknown;
  const connect: Connector = (options, done) => {
    const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
    tunnel(proxy, options.hostname, port)
      .then((socket): net.Socket | Promise<net.Socket> =>
        options.protocol === "https:"
          ? secure(socket, options.servername || options.hostname, { ALPNProtocols: ["http/1.1"] })
          : socket,
      )
      .then((socket) => done(null, socket), (error: Error) => done(error, null));
  };
  (globalThis as Record<symbol, unknown>)[DISPATCHER] = new Agent({ connect });
}
