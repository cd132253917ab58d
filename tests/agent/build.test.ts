// The bundle: deterministic bytes (the image tag hashes them), strict types, and it starts on
// the Node the box has (set HOLM_AGENT_NODE to a Node 18 to check that; see README).
import { describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AGENT_NODE, ROOT, cleanup, startAgent } from "./harness";

const sha = (f: string) => crypto.createHash("sha256").update(fs.readFileSync(f)).digest("hex");

describe("bundle", () => {
  it("is byte-for-byte the same when built twice", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-build-"));
    execFileSync(process.execPath, [path.join(ROOT, "scripts/build-agent.mjs"), path.join(dir, "a.mjs")]);
    execFileSync(process.execPath, [path.join(ROOT, "scripts/build-agent.mjs"), path.join(dir, "b.mjs")]);
    expect(sha(path.join(dir, "a.mjs"))).toBe(sha(path.join(dir, "b.mjs")));
    const text = fs.readFileSync(path.join(dir, "a.mjs"), "utf8");
    expect(text).not.toContain(ROOT);
    expect(text).not.toMatch(/from\s+"(zod|esbuild)"/); // everything bundled
  });

  it("type-checks under strict settings", () => {
    const r = spawnSync(
      process.execPath,
      [
        path.join(ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--target", "es2022", "--module", "esnext",
        "--moduleResolution", "bundler", "--types", "node", "--skipLibCheck", "--noUnusedLocals", "--noUnusedParameters",
        "--noImplicitReturns", path.join(ROOT, "images/x11/agent/main.ts"),
      ],
      { encoding: "utf8" },
    );
    expect(r.stdout + r.stderr).toBe("");
    expect(r.status).toBe(0);
  }, 60_000);

  it(`starts and answers /health on ${AGENT_NODE}, with no display at all`, async () => {
    const agent = await startAgent({ HOLM_DISPLAY_BASE: "199" });
    const res = await fetch(`${agent.url}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ ok: false, screens: [{ screen: 0, display: ":199", x: false, vnc: false, cdp: false }] });
    await cleanup();
  });
});
