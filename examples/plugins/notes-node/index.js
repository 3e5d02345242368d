// The notes example: tools that read and write a JSON file in `data/`, the one directory the
// manifest lets the plugin write, a command the user runs without a model, a background
// service, and HTTP routes served under /plugins/notes-node/.
const fs = require("node:fs");
const path = require("node:path");
const { createServer } = require("@aleph/plugin-sdk");

const file = path.join(__dirname, "data", "notes.json");
const load = () => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : []);
const save = (notes) => {
  // Write whole, then rename: a crash never leaves half a file.
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(notes, null, 2));
  fs.renameSync(`${file}.tmp`, file);
};

// The backup service: a timer while it runs, one last copy when it stops.
let timer = null;
const backup = () => fs.writeFileSync(path.join(__dirname, "data", "notes.backup.json"), JSON.stringify(load()));

createServer({
  name: "notes-node",
  tools: {
    add: ({ text }) => {
      const notes = load();
      notes.push({ text, at: new Date().toISOString() });
      save(notes);
      return { kept: notes.length };
    },
    list: () => load().map((note) => note.text),
  },
  commands: {
    exportMarkdown: () => load().map((note) => `- ${note.text}`).join("\n"),
  },
  routes: {
    // GET /notes: the notes as JSON (a value that is not a response is sent with 200).
    listNotes: () => load(),
    // POST /notes with {"text": "..."}: keeps a note; 201 with its index.
    addNote: (request) => {
      const text = request.json?.text;
      if (typeof text !== "string" || text.length === 0) {
        return { status: 400, body: { error: "send a JSON body with a non-empty `text`" } };
      }
      const notes = load();
      notes.push({ text, at: new Date().toISOString() });
      save(notes);
      return { status: 201, headers: { location: `/plugins/notes-node/notes/${notes.length - 1}` }, body: { index: notes.length - 1 } };
    },
    // GET /notes/{index}: one note, or 404.
    getNote: (request) => {
      const note = load()[Number(request.params.index)];
      return note ? note : { status: 404, body: { error: `no note ${request.params.index}` } };
    },
  },
  services: {
    backup: {
      start: () => {
        timer = setInterval(backup, 5000);
      },
      stop: () => {
        clearInterval(timer);
        backup();
      },
    },
  },
}).start();
