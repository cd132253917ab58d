import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Holm } from "~/client/holm";
import { ROOT, type TestServer, removeTestBoxes, startServer } from "../support/server";

// The built `holm` CLI at its edges, as a user meets them: the wrong server or a broken token,
// a Ctrl-C while a box is being created, a followed trace whose box is removed, an empty batch.
// A subprocess against a real server and real boxes (at most two at a time).

let server: TestServer;
let holm: Holm;
let binDir: string;

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `onStart` gets the child (to interrupt it). */
function holmCli(args: string[], opts: { env?: Record<string, string>; onStart?: (child: ReturnType<typeof spawn>, out: Ran) => void } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(binDir, "holm"), args, {
      env: { ...process.env, HOLM_URL: server.base, HOLM_TOKEN: server.token, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Ran = { code: null, signal: null, stdout: "", stderr: "" };
    child.stdout.on("data", (d) => (out.stdout += d));
    child.stderr.on("data", (d) => (out.stderr += d));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ ...out, code, signal }));
    opts.onStart?.(child, out);
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const liveIds = async () => new Set((await holm.boxes.list()).map((b) => b.id));
const stateOf = (id: string) => holm.boxes.get(id).then((b) => b.state, (e: { code?: string }) => e.code);

beforeAll(async () => {
  expect(fs.existsSync(path.join(ROOT, "build/cli/holm.js")), "run npm run build first").toBe(true);
  server = await startServer();
  holm = new Holm({ baseUrl: server.base, token: server.token });
  binDir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-bin-"));
  fs.symlinkSync(path.join(ROOT, "build/cli/holm.js"), path.join(binDir, "holm"));
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("holm CLI: which server, and what it answered", () => {
  it("a server it cannot reach is the one it was given, --url over HOLM_URL, and says where that came from", async () => {
    const flag = await holmCli(["--url", "http://127.0.0.1:9", "boxes", "ls"]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/^transport: could not reach http:\/\/127\.0\.0\.1:9 \(.+\); is the server running\? \(--url\)\n$/);
    expect(flag.stderr).not.toContain(server.base);
    const fromEnv = await holmCli(["boxes", "ls"], { env: { HOLM_URL: "http://127.0.0.1:9" } });
    expect(fromEnv.stderr).toMatch(/^transport: could not reach http:\/\/127\.0\.0\.1:9 .*\(HOLM_URL\)\n$/);
  });

  it("with HOLM_TOKEN unset on a server that needs one: says to set HOLM_TOKEN (not to send an Authorization header)", async () => {
    const out = await holmCli(["boxes", "ls"], { env: { HOLM_TOKEN: "" } });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^unauthorized: this server needs credentials; HOLM_TOKEN is not set: set it to a holm_sk_ key from the console's Keys page \(or the server token\)\n$/);
    expect(out.stderr).not.toContain("Authorization");
  });

  it("a HOLM_TOKEN with a control character is called malformed, and is not printed", async () => {
    const out = await holmCli(["boxes", "ls"], { env: { HOLM_TOKEN: "holm_sk_secret\x01part" } });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^bad_request: HOLM_TOKEN is malformed: it has a control character/);
    expect(out.stderr).not.toMatch(/secret|part|transport/);
  });

  it("an HTML page where the API should be is named, not dumped", async () => {
    const prefixed = `${server.base}/prefix`;
    const out = await holmCli(["boxes", "ls"], { env: { HOLM_URL: prefixed } });
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(`bad_request: the server at ${prefixed} answered 404 with an HTML page, not holm's API; is HOLM_URL the holm server's root?\n`);
    // Something else answering 200 with a page (a proxy's login page, another app).
    const other = http.createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!DOCTYPE html><html><title>Sign in</title></html>"));
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      const page = await holmCli(["--url", url, "boxes", "ls"]);
      expect(page.code).toBe(1);
      expect(page.stderr).toBe(`bad_request: the server at ${url} answered 200 with an HTML page, not holm's API; is --url the holm server's root?\n`);
    } finally {
      other.close();
    }
  });
});

describe("holm CLI: a box's life", () => {
  it("Ctrl-C while holm new waits removes the box being created and says so", async () => {
    const before = await liveIds();
    let made: string | undefined;
    try {
      const out = await holmCli(["new", "--ttl", "10"], {
        onStart: (child) => {
          // Interrupted once the box is on the server, starting (its id not yet printed).
          void until("a new box", async () => [...(await liveIds())].find((id) => !before.has(id))).then((id) => {
            made = id;
            child.kill("SIGINT");
          });
        },
      });
      expect(made).toBeDefined();
      // It dies by the signal, as an uncaught Ctrl-C does (a shell shows 130).
      expect(out.signal).toBe("SIGINT");
      expect(out.stdout).toBe("");
      expect(out.stderr).toContain(`interrupted: removed ${made}`);
      expect(await stateOf(made!)).toBe("gone");
    } finally {
      if (made) await holm.boxes.remove(made).catch(() => undefined);
    }
  });

  it("Ctrl-C at once after holm new starts leaves no box behind", async () => {
    const before = await liveIds();
    try {
      // Interrupted the moment its first line arrives (as a script watching it would): the old
      // CLI printed the line before its handler was installed and died silently 39 times in 40.
      const out = await holmCli(["new", "--ttl", "10"], {
        onStart: (child, seen) => {
          let sent = false;
          child.stderr!.on("data", () => {
            if (!sent && seen.stderr.includes("creating a box")) {
              sent = true;
              child.kill("SIGINT");
            }
          });
        },
      });
      expect(out.signal, JSON.stringify(out)).toBe("SIGINT");
      expect(out.stderr).toMatch(/interrupted: (removed box_\w+|no box was made)/);
      // Whatever the server made of the request is gone, now and once its launch is over.
      await new Promise((r) => setTimeout(r, 3000));
      expect([...(await liveIds())].filter((id) => !before.has(id))).toEqual([]);
    } finally {
      for (const id of await liveIds()) if (!before.has(id)) await holm.boxes.remove(id).catch(() => undefined);
    }
  });

  it("Ctrl-C while holm fork waits removes the fork's box once the server names it", async () => {
    const source = await holm.boxes.create({ placement: { expires_after_secs: 600 } });
    const before = new Set([...(await liveIds()), source.id]);
    let made: string | undefined;
    try {
      const out = await holmCli(["fork", source.id], {
        onStart: (child) => {
          // Interrupted once the fork's box is on the server, starting (the fork has not answered).
          void until("the fork's box", async () => [...(await liveIds())].find((id) => !before.has(id))).then((id) => {
            made = id;
            child.kill("SIGINT");
          });
        },
      });
      expect(made).toBeDefined();
      expect(out.signal).toBe("SIGINT");
      expect(out.stdout).toBe("");
      expect(out.stderr).toContain("interrupted: removing the fork once the server names it");
      expect(out.stderr).toContain(`interrupted: removed ${made}`);
      expect(await stateOf(made!)).toBe("gone");
      // The source is untouched.
      expect(await stateOf(source.id)).toBe("ready");
    } finally {
      for (const id of [made, source.id]) if (id) await holm.boxes.remove(id).catch(() => undefined);
    }
  });

  it("holm new's box has the labels it was given, not the one it is found by on Ctrl-C", async () => {
    const out = await holmCli(["--json", "new", "--ttl", "10", "--label", "team=web"]);
    try {
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toMatchObject({ state: "ready", labels: { team: "web" } });
      expect((await holm.boxes.get(JSON.parse(out.stdout).id)).labels).toEqual({ team: "web" });
    } finally {
      await holm.boxes.remove(JSON.parse(out.stdout || "{}").id ?? "box_none").catch(() => undefined);
    }
  });

  it("trace --follow ends with 0 once the box is removed, and at once for a removed box", async () => {
    const box = (await holm.boxes.create({ placement: { expires_after_secs: 600 } }, { wait: true })).id;
    try {
      const followed = holmCli(["trace", box, "--follow"], {
        onStart: (_, seen) => void until("the first entry", () => (seen.stdout.includes("\n") ? true : undefined)).then(() => holm.boxes.remove(box)),
      });
      const out = await Promise.race([followed, new Promise<never>((_, no) => setTimeout(() => no(new Error("trace --follow did not end")), 20_000))]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.trim().split("\n").pop()).toMatch(/removed/);
      const again = await Promise.race([holmCli(["--json", "trace", box, "--follow"]), new Promise<never>((_, no) => setTimeout(() => no(new Error("did not end")), 20_000))]);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout.trim().split("\n").pop()!)).toMatchObject({ event: "gone" });
    } finally {
      await holm.boxes.remove(box).catch(() => undefined);
    }
  });

  it("an empty batch says it did nothing", async () => {
    const box = (await holm.boxes.create({ placement: { expires_after_secs: 600 } }, { wait: true })).id;
    try {
      const file = path.join(binDir, "empty.json");
      fs.writeFileSync(file, "[]");
      const out = await holmCli(["batch", box, file]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stderr).toBe(`the batch has no actions: nothing was done\n`);
    } finally {
      await holm.boxes.remove(box).catch(() => undefined);
    }
  });
});
