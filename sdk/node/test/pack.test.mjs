// `npm pack` in a fresh copy of the package as a checkout has it (no dist/, no generated
// src/version.ts, the dev dependencies installed): `prepack` builds it, and the tarball holds
// the two builds, their types, the README, both licenses and package.json, and nothing of
// the sources. Offline: packing a directory asks no registry.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

const root = fileURLToPath(new URL("..", import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** What a checkout does not have: installed packages, build output, build bookkeeping. */
const UNTRACKED = new Set(["node_modules", "dist", ".built", ".build.lock", ".build.lock.d", "src/version.ts"]);

/** The entries of a .tgz: each file's path and text. */
function untar(gzipped) {
  const tar = gunzipSync(gzipped);
  const files = new Map();
  const field = (at, length) => tar.subarray(at, at + length).toString("utf8").replace(/\0.*$/s, "");
  for (let at = 0; at + 512 <= tar.length; ) {
    const name = field(at, 100);
    if (name === "") break;
    const prefix = field(at + 345, 155);
    const size = parseInt(field(at + 124, 12).trim() || "0", 8);
    const type = field(at + 156, 1);
    const body = tar.subarray(at + 512, at + 512 + size);
    if (type === "0" || type === "") files.set(prefix ? `${prefix}/${name}` : name, body.toString("utf8"));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** Runs npm with `args` in `cwd`: the npm running this test when there is one, else `npm`. */
function npm(args, cwd) {
  const [command, first] = process.env.npm_execpath
    ? [process.execPath, [process.env.npm_execpath]]
    : ["npm", []];
  const run = spawnSync(command, [...first, ...args], { cwd, encoding: "utf8", shell: !process.env.npm_execpath && process.platform === "win32" });
  assert.equal(run.status, 0, `npm ${args.join(" ")} failed:\n${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

test("npm pack in a clean checkout builds the package and ships what it promises", (t) => {
  const scratch = mkdtempSync(join(tmpdir(), "aleph-sdk-pack-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const checkout = join(scratch, "sdk");
  cpSync(root, checkout, {
    recursive: true,
    filter: (path) => !UNTRACKED.has(relative(root, path).split(sep).join("/")),
  });
  // The dev dependencies (TypeScript) as `npm ci` would have installed them.
  symlinkSync(join(root, "node_modules"), join(checkout, "node_modules"), "junction");
  const out = join(scratch, "out");
  mkdirSync(out);

  const packed = JSON.parse(npm(["pack", "--json", "--offline", "--pack-destination", out], checkout));
  assert.equal(packed.length, 1);
  const files = untar(readFileSync(join(out, packed[0].filename)));
  const names = [...files.keys()].map((name) => name.replace(/^package\//, "")).sort();

  const builds = ["cjs", "esm"].flatMap((build) =>
    ["index.js", "index.d.ts", "proxy.js", "proxy.d.ts", "version.js", "version.d.ts", "package.json"].map(
      (file) => `dist/${build}/${file}`,
    ),
  );
  for (const name of ["package.json", "README.md", "LICENSE-MIT", "LICENSE-APACHE", ...builds]) {
    assert.ok(names.includes(name), `the tarball lacks ${name}: ${names.join(", ")}`);
  }
  for (const name of names) {
    assert.ok(
      ["package.json", "README.md", "LICENSE-MIT", "LICENSE-APACHE"].includes(name) ||
        /^dist\/(cjs|esm)\/[\w.]+\.(js|d\.ts)$/.test(name) ||
        /^dist\/(cjs|esm)\/package\.json$/.test(name),
      `the tarball should not hold ${name}`,
    );
  }

  // Every path package.json names is in it, and the builds carry package.json's version.
  const shipped = JSON.parse(files.get("package/package.json"));
  assert.equal(shipped.version, manifest.version);
  const targets = [shipped.main, shipped.types];
  for (const condition of Object.values(shipped.exports["."])) targets.push(condition.types, condition.default);
  for (const target of targets) assert.ok(names.includes(target.replace(/^\.\//, "")), target);
  for (const build of ["cjs", "esm"]) {
    assert.match(files.get(`package/dist/${build}/version.js`), new RegExp(`"${manifest.version.replace(/\./g, "\\.")}"`));
  }
  assert.match(files.get("package/LICENSE-MIT"), /Copyright \(c\) 2026 The aleph-tools authors/);
  assert.match(files.get("package/LICENSE-APACHE"), /Apache License\s+Version 2\.0, January 2004/);
});
