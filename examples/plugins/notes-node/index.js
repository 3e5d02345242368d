// The notes example: tools that read and write a JSON file in `data/`, the one directory the
// manifest lets the plugin write, and a command the user runs without a model.
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
