// The echo bridge example: a channel and a model provider, written with the SDK.
const { createServer } = require("@aleph/plugin-sdk");

let room = null;
const lastText = (request) => request.messages?.at(-1)?.content ?? "";

createServer({
  name: "echo-bridge",
  channels: {
    // `ctx.receive` hands the host a message; it stays valid after the handler returns.
    connect: (config, ctx) => {
      room = { name: config.room ?? "lobby", receive: ctx.receive };
      return { joined: room.name };
    },
    disconnect: () => {
      room = null;
      return null;
    },
    send: (message) => {
      if (!room) throw new Error("not connected; call connect first");
      setTimeout(() => room?.receive({ room: room.name, from: "echo", text: `you said: ${message.text}` }), 10);
      return { delivered: true };
    },
  },
  providers: {
    listModels: () => [{ id: "echo-1", context_window: 4096 }],
    chat: (request) => ({ message: { role: "assistant", content: lastText(request) } }),
    // Each `ctx.emit` reaches the host as it is made.
    stream: async (request, ctx) => {
      for (const word of lastText(request).split(" ")) {
        ctx.emit({ delta: `${word} ` });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return null;
    },
    embed: (input) => [input].flat().map((text) => [text.length, text.split(" ").length]),
  },
}).start();
