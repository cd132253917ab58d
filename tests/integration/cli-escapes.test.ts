import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Holm } from "~/client/holm";
import { ROOT, type TestServer, removeTestBoxes, startServer } from "../support/server";

// Strings from a box reach the `holm` CLI's human output (the trace's commands, page and window
// titles, messages quoting them): their terminal escapes must reach the user's terminal as
// visible text, never as escapes it obeys (retitle, clear, OSC 52 clipboard write).

let server: TestServer;
let holm: Holm;
let box: string;
let binDir: string;

/** What a user's terminal would obey: C0 controls but newline, DEL and C1. */
const CONTROLS = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;
const TITLE = "\x1b]0;pwned\x07";
const CLEAR = "\x1b[2J";
const CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07";
const C1_CSI = "\x9b31m";

/** Runs the CLI; with `until`, stops it (SIGINT, as a user would) once its stdout matches. */
function holmCli(...args: (string | RegExp)[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const until = args.find((a): a is RegExp => a instanceof RegExp);
  const argv = args.filter((a): a is string => typeof a === "string");
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(binDir, "holm"), argv, {
      env: { ...process.env, HOLM_URL: server.base, HOLM_TOKEN: server.token },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
      if (until?.test(stdout)) child.kill("SIGINT");
    });
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  expect(fs.existsSync(path.join(ROOT, "build/cli/holm.js")), "run npm run build first").toBe(true);
  server = await startServer();
  holm = new Holm({ baseUrl: server.base, token: server.token });
  binDir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-bin-"));
  fs.symlinkSync(path.join(ROOT, "build/cli/holm.js"), path.join(binDir, "holm"));
  box = (await holm.boxes.create({ placement: { expires_after_secs: 900 } }, { wait: true })).id;
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("holm's human output and a box's strings", () => {
  it("holm trace shows a command's escape sequences as text; --json keeps them exactly, escaped", async () => {
    // The page's title set to escapes, then a command carrying them: the trace records both.
    const res = await server.api(`/v1/boxes/${box}/exec`, {
      method: "POST",
      json: { argv: ["printf", `${TITLE}${CLEAR}`, CLIPBOARD, C1_CSI] },
    });
    expect(res.status, await res.clone().text()).toBe(200);

    const human = await holmCli("trace", box);
    expect(human.code, human.stderr).toBe(0);
    const ran = human.stdout.split("\n").find((l) => l.includes("ran printf"));
    expect(ran, human.stdout).toBeDefined();
    expect(JSON.stringify(human.stdout), "raw controls in holm trace's output").not.toMatch(/\\u00(?:[01][0-9a-f]|7f|8[0-9a-f]|9[0-9a-f])/);
    expect(CONTROLS.test(human.stdout.replace(/\n/g, ""))).toBe(false);
    expect(ran).toContain("\\x1b]0;pwned\\x07\\x1b[2J");
    expect(ran).toContain("\\x9b31m");

    const asJson = await holmCli("--json", "trace", box);
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(CONTROLS.test(asJson.stdout.replace(/\n/g, ""))).toBe(false);
    const entry = JSON.parse(asJson.stdout).entries.find((e: { event: string }) => e.event === "ran");
    expect(entry.data.argv).toEqual(["printf", `${TITLE}${CLEAR}`, CLIPBOARD, C1_CSI]);
  });

  it("holm --json trace --follow writes C1 controls escaped, as --json without --follow does", async () => {
    const out = await holmCli("--json", "trace", box, "--follow", /"event":"ran"[^\n]*\n/);
    const line = out.stdout.split("\n").find((l) => l.includes('"event":"ran"'));
    expect(line, out.stdout + out.stderr).toBeDefined();
    expect(CONTROLS.test(line!)).toBe(false);
    expect(JSON.parse(line!).data.argv).toEqual(["printf", `${TITLE}${CLEAR}`, CLIPBOARD, C1_CSI]);
  });

  it("a batch refused for a step quoting a caller's string says so as text", async () => {
    const file = path.join(binDir, "batch.json");
    fs.writeFileSync(file, JSON.stringify([{ type: "press", chord: `${TITLE}${C1_CSI}` }]));
    const out = await holmCli("batch", box, file);
    expect(out.code, out.stderr).not.toBe(0);
    // The server refuses a key name no key has before the batch runs, quoting it.
    expect(out.stderr).toContain("actions[0] (press): chord: unknown key name");
    expect(CONTROLS.test(out.stderr.replace(/\n/g, ""))).toBe(false);
  });

  it("an error message quoting a box's string is printed as text", async () => {
    // A name with controls is refused by the server, whose message may quote what was sent.
    const out = await holmCli("trace", `box_${TITLE}`);
    expect(out.code).not.toBe(0);
    expect(CONTROLS.test(out.stderr.replace(/\n/g, ""))).toBe(false);
  });
});
