// The house rules anyone can check (docs/decisions/0009-layers.md): the layer rules and no import
// cycle (dependency-cruiser, .dependency-cruiser.cjs), and no file in app/ or server/ over
// MAX_LINES lines unless its first line says why ("// Over 400 lines: …").
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MAX_LINES = 400;
let failed = false;

try {
  const bin = path.join(root, "node_modules/.bin/depcruise");
  const out = execFileSync(bin, ["app", "server", "images/x11/agent", "cli", "--config", ".dependency-cruiser.cjs"], {
    cwd: root,
    encoding: "utf8",
  });
  process.stdout.write(out);
} catch (e) {
  process.stdout.write(e.stdout ?? "");
  process.stderr.write(e.stderr ?? String(e));
  failed = true;
}

function* sources(dir) {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) yield* sources(p);
    else if (/\.(ts|tsx|mjs|js)$/.test(ent.name)) yield p;
  }
}

for (const dir of ["app", "server"]) {
  for (const file of sources(path.join(root, dir))) {
    const text = fs.readFileSync(file, "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines <= MAX_LINES) continue;
    const first = text.slice(0, text.indexOf("\n"));
    if (/^\/\/ Over 400 lines: \S/.test(first)) continue;
    console.error(`${path.relative(root, file)}: ${lines} lines, and its first line does not say why ("// Over 400 lines: …")`);
    failed = true;
  }
}

if (failed) process.exit(1);
console.log(`✔ files: none in app/ or server/ over ${MAX_LINES} lines without a reason`);
