// The tunnel older Node.js versions use to reach the sandbox's proxy: a CONNECT answered 200
// carries the connection on; any other answer fails it with the proxy's reason.
const test = require("node:test");
const assert = require("node:assert/strict");
const net = require("node:net");
const { tunnel } = require("../dist/cjs/proxy.js");

/** A proxy on loopback that answers each CONNECT with `answer(target)` and then echoes. */
async function proxy(answer) {
  const asked = [];
  const server = net.createServer((socket) => {
    let head = "";
    const onData = (chunk) => {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      const target = head.split(" ")[1];
      asked.push(target);
      const reply = answer(target);
      socket.write(reply.status === 200 ? "HTTP/1.1 200 Connection established\r\n\r\n" : reply.text);
      if (reply.status === 200) socket.pipe(socket);
      else socket.end();
    };
    socket.on("data", onData);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, asked, url: new URL(`http://127.0.0.1:${server.address().port}`) };
}

test("a tunnel the proxy admits carries bytes both ways", async () => {
  const { server, asked, url } = await proxy(() => ({ status: 200 }));
  const socket = await tunnel(url, "example.com", 443);
  socket.write("echo");
  const echoed = await new Promise((resolve) => socket.once("data", resolve));
  assert.equal(echoed.toString(), "echo");
  socket.destroy();
  const v6 = await tunnel(url, "[::1]", 8443);
  v6.destroy();
  assert.deepEqual(asked, ["example.com:443", "[::1]:8443"]);
  server.close();
});

test("a refused tunnel fails with the proxy's reason", async () => {
  const reason = "the sandbox's network proxy refused example.org:443: not granted";
  const { server, url } = await proxy(() => ({
    status: 403,
    text: `HTTP/1.1 403 Forbidden\r\nContent-Length: ${reason.length}\r\n\r\n${reason}`,
  }));
  await assert.rejects(tunnel(url, "example.org", 443), { message: reason });
  server.close();
});
