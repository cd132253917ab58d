// Bundles the `holm` CLI (cli/holm.ts, on the typed client in app/client/) into one ESM file,
// build/cli/holm.js: the package's `bin`. Everything it needs (commander, the client) is inside,
// so `npm link` (or a copy of the file anywhere on PATH) runs it with Node alone.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";
import fs from "node:fs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outfile = path.join(root, "build/cli/holm.js");
const { version } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

await build({
  absWorkingDir: root,
  entryPoints: ["cli/holm.ts"],
  outfile,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  tsconfig: "tsconfig.json",
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  define: { HOLM_VERSION: JSON.stringify(version), "process.env.NODE_ENV": '"production"' },
  // A bundled CommonJS dependency (commander) calls require() for node builtins.
  banner: { js: '#!/usr/bin/env node\nimport { createRequire as __holmCreateRequire } from "node:module"; const require = __holmCreateRequire(import.meta.url);' },
});
fs.chmodSync(outfile, 0o755);

// holm backup / restore / doctor (cli/local/, docs/decisions/0023): run beside the server, on its
// install. Their npm packages stay in node_modules (better-sqlite3 is native; dockerode, pg and
// kysely are the server's own), so this bundle is only our code; holm.js imports it at run time.
const localOut = path.join(root, "build/cli/holm-local.js");
await build({
  absWorkingDir: root,
  entryPoints: ["cli/local/index.ts"],
  outfile: localOut,
  bundle: true,
  packages: "external",
  platform: "node",
  target: "node20",
  format: "esm",
  tsconfig: "tsconfig.json",
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
console.log(`cli bundle ${path.relative(root, outfile)} ${(fs.statSync(outfile).size / 1024).toFixed(0)} KiB`);
