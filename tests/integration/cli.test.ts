import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Holm } from "~/client/holm";
import { ROOT, type TestServer, removeTestBoxes, startServer } from "../support/server";

// The built `holm` CLI (build/cli/holm.js, `npm run build`) as a user runs it: a subprocess on
// PATH, against a real server and real boxes. The README's CLI block runs exactly as written (so
// the README cannot drift from the CLI); then targeted checks on one box. Direct API calls go
// through the typed client (app/client/holm.ts).

let server: TestServer;
let holm: Holm;
let box: string;
let binDir: string;
let work: string;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function env(extra: Record<string, string> = {}) {
  return { ...process.env, PATH: `${binDir}:${process.env.PATH}`, HOLM_URL: server.base, HOLM_TOKEN: server.token, ...extra };
}

function run(cmd: string, args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: work, env: env(opts.env), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}

const holmCli = (...args: string[]) => run("holm", args);

/** Lines of a running command's stdout, as they come. */
function lines(child: ChildProcess) {
  const seen: string[] = [];
  let buf = "";
  child.stdout!.on("data", (d) => {
    buf += d;
    const parts = buf.split("\n");
    buf = parts.pop()!;
    seen.push(...parts);
  });
  return {
    seen,
    async waitFor(pred: (line: string) => boolean, ms = 20_000): Promise<string> {
      const deadline = Date.now() + ms;
      for (;;) {
        const hit = seen.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`no such line within ${ms} ms; saw:\n${seen.join("\n")}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** The README's fenced bash block of the CLI section that runs holm (the install block is the other). */
function readmeBlock(): string {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## CLI\n"));
  const end = section.indexOf("\n## ", 5);
  const blocks = [...section.slice(0, end).matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.includes("holm boxes create"));
  if (!block) throw new Error("README.md has no CLI block that runs holm boxes create");
  return block;
}

beforeAll(async () => {
  expect(fs.existsSync(path.join(ROOT, "build/cli/holm.js")), "run npm run build first").toBe(true);
  server = await startServer();
  holm = new Holm({ baseUrl: server.base, token: server.token });
  binDir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-bin-"));
  fs.symlinkSync(path.join(ROOT, "build/cli/holm.js"), path.join(binDir, "holm"));
  work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-cli-"));
  box = (await holm.boxes.create({ placement: { expires_after_secs: 900 } }, { wait: true })).id;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("holm CLI", () => {
  it("runs the README's CLI block as written", async () => {
    const block = readmeBlock();
    const out = await run("bash", ["-euo", "pipefail", "-c", block]);
    expect(out.code, `stdout:\n${out.stdout}\nstderr:\n${out.stderr}`).toBe(0);
    // What the block made: a PNG, a JSON list that had the box, and two boxes removed again.
    const png = fs.readFileSync(path.join(work, "shot.png"));
    expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    const removed = [...out.stdout.matchAll(/^removed (box_\S+)$/gm)].map((m) => m[1]!);
    expect(removed).toHaveLength(2);
    const listed = JSON.parse(fs.readFileSync(path.join(work, "boxes.json"), "utf8")).boxes.map((b: { id: string }) => b.id);
    expect(listed).toEqual(expect.arrayContaining(removed));
    // The batch clicked the button, the exec ran, the fork replayed: in the removed box's trace.
    const trace = await holm.trace.all(removed[0]!);
    expect(trace.map((e) => e.event)).toEqual(expect.arrayContaining(["acted", "ran", "gone"]));
    const live = (await holm.boxes.list()).map((b) => b.id);
    for (const id of removed) expect(live).not.toContain(id);
  });

  it("--json prints JSON a script can parse", async () => {
    const ls = await holmCli("--json", "boxes", "ls");
    expect(ls.code, ls.stderr).toBe(0);
    expect(JSON.parse(ls.stdout).boxes.map((b: { id: string }) => b.id)).toContain(box);
    const one = await holmCli("box", box, "--json");
    expect(JSON.parse(one.stdout)).toMatchObject({ id: box, state: "ready" });
    // Without --json: a table with the box on a row.
    const table = await holmCli("boxes", "ls");
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+STATE\s+SCREENS/);
    expect(table.stdout).toMatch(new RegExp(`^${box}\\s+ready\\s+1\\s+1280x800`, "m"));
  });

  it("an error prints code: message on stderr and exits non-zero", async () => {
    const missing = await holmCli("box", "box_does_not_exist");
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/^not_found: /);
    const wrong = await run("holm", ["boxes", "ls"], { env: { HOLM_TOKEN: "not-the-token" } });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^unauthorized: /);
    const down = await run("holm", ["boxes", "ls"], { env: { HOLM_URL: "http://127.0.0.1:9" } });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^transport: could not reach http:\/\/127\.0\.0\.1:9/);
  });

  it("exec passes the command's output and exit code through", async () => {
    const out = await holmCli("exec", box, "--", "sh", "-c", "echo out; echo err >&2; exit 7");
    expect(out).toMatchObject({ code: 7, stdout: "out\n" });
    expect(out.stderr).toContain("err");
    expect((await holmCli("exec", box, "--", "true")).code).toBe(0);
  });

  it("frame writes a PNG when redirected and refuses a terminal", async () => {
    const file = path.join(work, "frame.png");
    const out = await run("sh", ["-c", `holm frame ${box} > ${file}`]);
    expect(out.code, out.stderr).toBe(0);
    const png = fs.readFileSync(file);
    expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect(png.readUInt32BE(16)).toBe(1280);
    // script(1) gives the command a terminal as its stdout.
    const tty = await run("script", ["-qec", `holm frame ${box}`, "/dev/null"]);
    expect(tty.code).not.toBe(0);
    expect(tty.stdout).toContain("bad_request: not writing a PNG to a terminal");
    expect(tty.stdout).not.toContain("PNG\r\n");
  });

  it("batch reads steps from stdin and exits 1 when the batch stops at a step", async () => {
    const ok = await run("holm", ["batch", box, "-"], { input: JSON.stringify([{ type: "wait", ms: 10 }, { type: "cursor" }]) });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^\s+0 {2}wait\s+ok$/m);
    const stopped = await run("holm", ["batch", box, "-"], { input: JSON.stringify({ actions: [{ type: "read_file", path: "/no/such/file" }, { type: "cursor" }] }) });
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/^\w+: the batch stopped at step 0/m);
    expect(stopped.stdout).toMatch(/^\s+0  read_file\s+\w+: /m);
  });

  it("trace --follow prints an entry recorded after it started", async () => {
    const before = await holm.trace.all(box);
    const last = before[before.length - 1]!.seq;
    const child = spawn("holm", ["--json", "trace", box, "--follow", "--after", String(last)], { cwd: work, env: env() });
    const exited = new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    try {
      const out = lines(child);
      await new Promise((r) => setTimeout(r, 700)); // it is reading by now, and has nothing to print
      expect(out.seen).toEqual([]);
      await holm.boxes.exec(box, { argv: ["echo", "follow-marker"] });
      const line = await out.waitFor((l) => l.includes("follow-marker"));
      expect(JSON.parse(line)).toMatchObject({ event: "ran", data: { argv: ["echo", "follow-marker"] } });
      expect(JSON.parse(line).seq).toBeGreaterThan(last);
    } finally {
      child.kill("SIGTERM");
    }
    // Interrupted, a follow ends quietly with 0.
    expect(await exited).toBe(0);
  });

  it("fork --up-to prints only the new box's id; events --follow shows it being created", async () => {
    const { next } = await holm.events.list({ after: 0, limit: 1000 });
    const follow = spawn("holm", ["--json", "events", "--follow", "--after", String(next)], { cwd: work, env: env() });
    try {
      const events = lines(follow);
      const out = await holmCli("fork", box, "--up-to", "2");
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toMatch(/^box_[A-Za-z0-9_-]+\n$/);
      const id = out.stdout.trim();
      expect(id).not.toBe(box);
      expect(out.stderr).toMatch(new RegExp(`${id} ready: replayed \\d+ of \\d+ steps`));
      expect((await holm.boxes.get(id)).state).toBe("ready");
      const trace = await holm.trace.all(id);
      expect(trace.find((e) => e.event === "forked_from")?.data).toMatchObject({ box, up_to: 2 });
      const created = await events.waitFor((l) => l.includes(id) && l.includes("box.created"));
      expect(JSON.parse(created)).toMatchObject({ kind: "box.created", box_id: id });
      const rm = await holmCli("rm", id);
      expect(rm).toMatchObject({ code: 0, stdout: `removed ${id}\n` });
    } finally {
      follow.kill("SIGTERM");
    }
  });

  it("trace --limit refuses a count that is not a positive whole number, as other bad numbers", async () => {
    for (const bad of ["0", "-1", "1.5"]) {
      const out = await holmCli("trace", box, "--limit", bad);
      expect(out, bad).toMatchObject({ code: 1, stdout: "" });
      expect(out.stderr, bad).toMatch(/^bad_request: --limit must be a positive whole number/);
    }
    const one = await holmCli("--json", "trace", box, "--limit", "1");
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout).entries).toHaveLength(1);
  });

  it("view prints the console URL of the box's screen", async () => {
    const out = await holmCli("view", box);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(`${(await holm.boxes.get(box)).viewer_urls[0]}\n`);
    expect(out.stdout).toMatch(new RegExp(`/boxes/${box}\\?screen=0`));
  });

  // Last: it removes the shared box too (at most two boxes at a time).
  it("rm goes on past a box it cannot remove: prints each one removed, reports each failure, exits 1", async () => {
    const a = (await holm.boxes.create({ placement: { expires_after_secs: 900 } }, { wait: true })).id;
    const out = await holmCli("rm", a, "box_nope", box);
    expect(out.code).toBe(1);
    expect(out.stdout).toBe(`removed ${a}\nremoved ${box}\n`);
    expect(out.stderr).toMatch(/^not_found: .*box_nope/m);
    // Both are gone (/v1 answers 410 gone for a removed box).
    for (const id of [a, box]) expect(await holm.boxes.get(id).then((b) => b.state, (e) => e.code)).toBe("gone");
  });
});
