// Commands and files in the box. No X display runs for this agent: these routes do not need one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { batch, cleanup, startAgent, until, type Agent } from "./harness";

let agent: Agent;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-files-"));

beforeAll(async () => {
  agent = await startAgent({ HOLM_DISPLAY_BASE: "158", HOME: dir });
});
afterAll(cleanup);

describe("exec", () => {
  it("runs argv without a shell and returns code, stdout and stderr", async () => {
    const r = await agent.call("POST", "/exec", { argv: ["sh", "-c", 'echo "out:$1"; echo err >&2; exit 3', "sh", "$(rm -rf /)"] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 3, stdout: "out:$(rm -rf /)\n", stderr: "err\n", timed_out: false });
    const echo = await agent.call("POST", "/exec", { argv: ["echo", "$(id)", "`id`", "a b"] });
    expect(echo.body.stdout).toBe("$(id) `id` a b\n");
  });

  it("does not hand the agent's secret to the commands it runs", async () => {
    const r = await agent.call("POST", "/exec", { argv: ["env"] });
    expect(r.body.code).toBe(0);
    expect(r.body.stdout).toContain("DISPLAY=:158");
    expect(r.body.stdout).not.toContain("HOLM_AGENT_SECRET");
    expect(r.body.stdout).not.toContain(agent.secret);
  });

  it("kills the whole process group on timeout", async () => {
    const pidFile = path.join(dir, "bg.pid");
    const t = Date.now();
    const r = await agent.call("POST", "/exec", { argv: ["sh", "-c", `sleep 30 & echo $! > ${pidFile}; sleep 30`], timeout_ms: 400 });
    expect(r.body.timed_out).toBe(true);
    // Killed at its timeout, not after its 30 s (a loaded machine adds seconds, not tens).
    expect(Date.now() - t).toBeLessThan(15_000);
    const bg = Number(fs.readFileSync(pidFile, "utf8"));
    await until(() => {
      try {
        process.kill(bg, 0);
        return fs.readFileSync(`/proc/${bg}/stat`, "utf8").split(" ")[2] === "Z";
      } catch {
        return true;
      }
    }, "background sleep to die", 2000);
  });

  it("reports a missing program as exit 127, and runs as a batch step", async () => {
    const r = await agent.call("POST", "/exec", { argv: ["no-such-program-holm"] });
    expect(r.body).toMatchObject({ code: 127, timed_out: false });
    expect(r.body.stderr).toMatch(/ENOENT/);
    const b = await batch(agent, 0, { actions: [{ type: "exec", what: { argv: ["pwd"] } }] });
    expect(b.results[0]).toMatchObject({ ok: true, code: 0, stdout: `${dir}\n` });
  });
});

describe("files", () => {
  it("writes (making parents) and reads back bytes", async () => {
    const bytes = crypto.randomBytes(5000);
    const p = path.join(dir, "a/b/c.bin");
    const w = await agent.call("PUT", "/files", { path: p, contents_base64: bytes.toString("base64") });
    expect(w.body).toEqual({ path: p, bytes: 5000 });
    expect(fs.readFileSync(p).equals(bytes)).toBe(true);
    const r = await agent.call("GET", `/files?path=${encodeURIComponent(p)}`);
    expect(Buffer.from(r.body.contents_base64, "base64").equals(bytes)).toBe(true);
    const rel = await batch(agent, 0, { actions: [{ type: "write_file", what: { path: "rel.txt", contents_base64: Buffer.from("hi").toString("base64") } }, { type: "read_file", path: "rel.txt" }] });
    expect(rel.results[1]).toMatchObject({ ok: true, path: path.join(dir, "rel.txt"), contents_base64: Buffer.from("hi").toString("base64") });
  });

  it("takes a 40 MB file through PUT and GET", async () => {
    const big = crypto.randomBytes(40 * 1024 * 1024);
    const p = path.join(dir, "big.bin");
    const w = await agent.call("PUT", "/files", { path: p, contents_base64: big.toString("base64") });
    expect(w.status).toBe(200);
    expect(crypto.createHash("sha1").update(fs.readFileSync(p)).digest("hex")).toBe(crypto.createHash("sha1").update(big).digest("hex"));
    const r = await agent.call("GET", `/files?path=${encodeURIComponent(p)}`);
    expect(r.body.bytes).toBe(big.length);
    fs.rmSync(p);
  });

  it("answers not_found for a missing file and bad_request for a directory", async () => {
    const miss = await agent.call("GET", `/files?path=${encodeURIComponent(path.join(dir, "nope"))}`);
    expect(miss.status).toBe(404);
    expect(miss.body.code).toBe("not_found");
    const d = await agent.call("GET", `/files?path=${encodeURIComponent(dir)}`);
    expect(d.status).toBe(400);
  });

  it("lists a directory", async () => {
    fs.mkdirSync(path.join(dir, "list/sub"), { recursive: true });
    fs.writeFileSync(path.join(dir, "list/f.txt"), "12345");
    fs.symlinkSync("f.txt", path.join(dir, "list/link"));
    const r = await agent.call("GET", `/files/list?path=${encodeURIComponent(path.join(dir, "list"))}`);
    expect(r.body.entries.map((e: { name: string; kind: string }) => [e.name, e.kind])).toEqual([["f.txt", "file"], ["link", "symlink"], ["sub", "dir"]]);
    expect(r.body.entries[0].size).toBe(5);
    expect(r.body.entries[0].mtime_ms).toBeGreaterThan(Date.now() - 60_000);
  });

  it("greps with include, ignore_case and a limit", async () => {
    const g = path.join(dir, "grep");
    fs.mkdirSync(path.join(g, "deep/er"), { recursive: true });
    fs.writeFileSync(path.join(g, "a.conf"), "alpha\nNEEDLE one\nbeta\n");
    fs.writeFileSync(path.join(g, "deep/er/b.conf"), "needle two\n");
    fs.writeFileSync(path.join(g, "c.txt"), "needle three\n");
    fs.writeFileSync(path.join(g, "bin.conf"), Buffer.from([0, 1, 2, 110, 101, 101, 100, 108, 101]));
    const r = await agent.call("POST", "/files/grep", { pattern: "needle", path: g, include: "*.conf", ignore_case: true });
    expect(r.body).toEqual({
      matches: [
        { path: path.join(g, "a.conf"), line: 2, text: "NEEDLE one" },
        { path: path.join(g, "deep/er/b.conf"), line: 1, text: "needle two" },
      ],
      cut: false,
    });
    const cut = await agent.call("POST", "/files/grep", { pattern: "needle", path: g, limit: 1 });
    expect(cut.body.matches).toHaveLength(1);
    expect(cut.body.cut).toBe(true);
  });

  it("globs", async () => {
    const g = path.join(dir, "glob");
    for (const f of ["x.ts", "y.js", "src/a.ts", "src/deep/b.ts", "src/deep/c.md"]) {
      fs.mkdirSync(path.dirname(path.join(g, f)), { recursive: true });
      fs.writeFileSync(path.join(g, f), "");
    }
    const q = (pattern: string, extra = "") => agent.call("GET", `/files/glob?pattern=${encodeURIComponent(pattern)}&path=${encodeURIComponent(g)}${extra}`);
    expect((await q("**/*.ts")).body).toEqual({ paths: ["src/a.ts", "src/deep/b.ts", "x.ts"].map((f) => path.join(g, f)), cut: false });
    expect((await q("*.{ts,js}")).body.paths).toEqual(["x.ts", "y.js"].map((f) => path.join(g, f)));
    expect((await q("src/*/*.md")).body.paths).toEqual([path.join(g, "src/deep/c.md")]);
    expect((await q("**/*", "&limit=2")).body).toMatchObject({ cut: true });
    const abs = await batch(agent, 0, { actions: [{ type: "glob", what: { pattern: `${g}/src/**/*.ts` } }] });
    expect(abs.results[0].paths).toEqual(["src/a.ts", "src/deep/b.ts"].map((f) => path.join(g, f)));
  });
});
