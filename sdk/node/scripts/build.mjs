// Builds the package into dist/: the CommonJS build in dist/cjs and the ES module build in
// dist/esm, each with its type declarations and a package.json saying which kind of module
// its .js files are. Run by `npm run build`, and so by `npm pack` and `npm publish`
// (`prepack`).
//
// The version is written once, in package.json: this script writes it into src/version.ts
// (generated, not committed) before compiling, for the SDK to tell the host.

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** Writes `text` to `path` unless it holds it already, so an unchanged file keeps its time. */
function writeIfChanged(path, text) {
  let old = null;
  try {
    old = readFileSync(path, "utf8");
  } catch {
    // Not there yet.
  }
  if (old !== text) writeFileSync(path, text);
}

writeIfChanged(
  join(root, "src", "version.ts"),
  `// Generated from package.json by scripts/build.mjs; edit the version there.

/** The package's name. */
export const NAME = ${JSON.stringify(manifest.name)};

/** The package's version. */
export const VERSION = ${JSON.stringify(manifest.version)};
`,
);

// TypeScript is a dev dependency; its compiler is run with this Node.js.
const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");

rmSync(join(root, "dist"), { recursive: true, force: true });
for (const [config, out, type] of [
  ["tsconfig.json", "dist/cjs", "commonjs"],
  ["tsconfig.esm.json", "dist/esm", "module"],
]) {
  const run = spawnSync(process.execPath, [tsc, "-p", config], { cwd: root, stdio: "inherit" });
  if (run.status !== 0) {
    console.error(`tsc -p ${config} failed`);
    process.exit(run.status ?? 1);
  }
  mkdirSync(join(root, out), { recursive: true });
  writeFileSync(join(root, out, "package.json"), JSON.stringify({ type }, null, 2) + "\n");
}
