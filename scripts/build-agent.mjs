// Bundles the in-box agent (images/x11/agent/main.ts) into one ESM file for Debian's Node 18.
// Deterministic: no timestamps, no absolute paths, no sourcemap — the image tag hashes the bytes.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";
import crypto from "node:crypto";
import fs from "node:fs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outfile = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, "build/agent/agent.mjs");

await build({
  absWorkingDir: root,
  entryPoints: ["images/x11/agent/main.ts"],
  outfile,
  bundle: true,
  platform: "node",
  target: "node18",
  format: "esm",
  minify: false,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  // A bundled CommonJS dependency may call require() for node builtins.
  banner: { js: 'import { createRequire as __holmCreateRequire } from "node:module"; const require = __holmCreateRequire(import.meta.url);' },
});

const sha = crypto.createHash("sha256").update(fs.readFileSync(outfile)).digest("hex");
console.log(`agent bundle ${path.relative(root, outfile)} sha256 ${sha.slice(0, 16)}`);
