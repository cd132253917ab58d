import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// History through /v1 on real boxes: what a batch records, reading after removal, surviving a
// kill -9 with the local store, and forks that replay a form-filling run.

// A still page: no caret, no animation, so the same state draws the same pixels.
const FORM = `<!doctype html><html><head><style>*{caret-color:transparent}</style></head>
<body style="margin:0;font:20px sans-serif;background:#fff">
<input id="name" style="position:absolute;left:40px;top:40px;width:400px;height:40px;font-size:20px">
<input id="city" style="position:absolute;left:40px;top:120px;width:400px;height:40px;font-size:20px">
<button id="go" style="position:absolute;left:40px;top:200px;width:200px;height:50px" onclick="document.body.style.background='#cfe'">Save</button>
</body></html>`;
const FORM_URL = `data:text/html;base64,${Buffer.from(FORM).toString("base64")}`;

// The desktop the suite's boxes run: trace.wayland.test.ts runs it again on Wayland (issue 18).
const DESKTOP = (globalThis as { HOLM_TRACE_DESKTOP?: string }).HOLM_TRACE_DESKTOP ?? "x11";

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function launch(body: unknown = { spec: { desktop: { features: [], ...(DESKTOP === "wayland" && { server: "wayland" }) } } }) {
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: body }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  expect(box.spec.desktop.server).toBe(DESKTOP);
  return box;
}

async function trace(id: string) {
  const all: any[] = [];
  let after: number | undefined;
  for (;;) {
    const res = await server.api(`/v1/boxes/${id}/trace?limit=500${after !== undefined ? `&after=${after}` : ""}`);
    expect(res.status).toBe(200);
    const page = await json(res);
    all.push(...page.entries);
    if (page.next === null) return all;
    after = page.next;
  }
}

/** Waits for background frame sampling to land. */
async function settleFrames(id: string, ms = 1200) {
  await new Promise((r) => setTimeout(r, ms));
  return trace(id);
}

async function formRun(id: string) {
  // The run itself is all batch steps; CDP only reads where the fields are drawn.
  const res = await server.api(`/v1/boxes/${id}/screens/0/actions`, {
    method: "POST",
    json: { actions: [{ type: "open_url", url: FORM_URL, target: "current" }, { type: "wait", ms: 300 }] },
  });
  expect(res.status).toBe(200);
  const p2 = await Page.open(server, id);
  const name = await p2.centre("#name");
  const city = await p2.centre("#city");
  const go = await p2.centre("#go");
  p2.close();
  const run = await json(
    await server.api(`/v1/boxes/${id}/screens/0/actions`, {
      method: "POST",
      json: {
        actions: [
          { type: "click", at: name },
          { type: "type", text: "Ada Lovelace" },
          { type: "click", at: city },
          { type: "type", text: "London" },
          { type: "click", at: go },
        ],
        want: ["frame"],
        settle_ms: 300,
      },
    }),
  );
  expect(run.stopped_at).toBeNull();
  return run.frame;
}

function differingPixels(a: Buffer, b: Buffer): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-cmp-"));
  fs.writeFileSync(path.join(dir, "a.png"), a);
  fs.writeFileSync(path.join(dir, "b.png"), b);
  try {
    execFileSync("compare", ["-metric", "AE", "-fuzz", "2%", path.join(dir, "a.png"), path.join(dir, "b.png"), "null:"], { stdio: "pipe" });
    return 0;
  } catch (e) {
    return Number(String((e as { stderr: Buffer }).stderr).trim().split(" ")[0]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function frameBytes(boxId: string, hash: string) {
  const res = await server.api(`/v1/boxes/${boxId}/trace/frames/${hash}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("image/png");
  return Buffer.from(await res.arrayBuffer());
}

describe("trace", () => {
  let source: any;
  let lastFrame: string;

  it("records box_created, one acted entry per step, and frames only when the screen changed", async () => {
    source = await launch();
    const frame = await formRun(source.id);
    // The trace names a frame by the server's SHA-256 of its PNG, not by the box's change token.
    lastFrame = createHash("sha256").update(Buffer.from(frame.png_base64, "base64")).digest("hex");
    // The same still screen asked for twice adds no frame entry.
    for (let i = 0; i < 2; i++) {
      await server.api(`/v1/boxes/${source.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "cursor" }], want: ["frame"] } });
    }
    const entries = await settleFrames(source.id);
    expect(entries[0]).toMatchObject({ seq: 0, event: "box_created", data: { spec: { desktop: { features: [] } } } });
    const acted = entries.filter((e) => e.event === "acted");
    expect(acted.map((e) => e.data.step.type)).toEqual(["open_url", "wait", "click", "type", "click", "type", "click", "cursor", "cursor"]);
    expect(acted.every((e) => e.actor === "agent" && e.screen === 0)).toBe(true);
    const frames = entries.filter((e) => e.event === "frame");
    const hashes = frames.map((e) => e.frame);
    expect(new Set(hashes).size).toBe(hashes.length); // never the same screen twice in a row
    expect(hashes).toContain(lastFrame);
    expect(entries.filter((e) => e.frame === lastFrame)).toHaveLength(1);
    const png = await frameBytes(source.id, lastFrame);
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    // Seq is gap-free and times never go back.
    entries.forEach((e, i) => expect(e.seq).toBe(i));
  });

  it("records commands, file writes and clipboard sets without their bytes", async () => {
    await server.api(`/v1/boxes/${source.id}/exec`, { method: "POST", json: { argv: ["ls", "/tmp"] } });
    await server.api(`/v1/boxes/${source.id}/files`, {
      method: "PUT",
      json: { path: "/tmp/marker.txt", contents_base64: Buffer.from("secret-bytes").toString("base64") },
    });
    await server.api(`/v1/boxes/${source.id}/screens/0/clipboard`, { method: "PUT", json: { text: "secret-clip" } });
    const entries = await trace(source.id);
    const tail = entries.slice(-3);
    expect(tail.map((e) => e.event)).toEqual(["ran", "file_written", "clipboard_set"]);
    expect(tail[0].data).toMatchObject({ argv: ["ls", "/tmp"], code: 0 });
    expect(JSON.stringify(entries)).not.toContain("secret-bytes");
    expect(JSON.stringify(entries)).not.toContain(Buffer.from("secret-bytes").toString("base64"));
    expect(JSON.stringify(entries)).not.toContain("secret-clip");
  });

  it("pages with after/next and refuses a limit over 500", async () => {
    const first = await json(await server.api(`/v1/boxes/${source.id}/trace?limit=3`));
    expect(first.entries).toHaveLength(3);
    expect(first.next).toBe(2);
    const second = await json(await server.api(`/v1/boxes/${source.id}/trace?limit=3&after=${first.next}`));
    expect(second.entries[0].seq).toBe(3);
    expect((await server.api(`/v1/boxes/${source.id}/trace?limit=501`)).status).toBe(400);
  });

  it("fork replays the run and reproduces the final screen; skips the file write and clipboard set", async () => {
    const res = await server.api(`/v1/boxes/${source.id}/fork`, {
      method: "POST",
      json: { mode: "replay" },
      headers: { "idempotency-key": "fork-once" },
    });
    const fork = await json(res);
    expect(res.status, JSON.stringify(fork)).toBe(200);
    expect(fork.box.id).not.toBe(source.id);
    // The fork runs on the source's desktop: its spec is the recorded one.
    expect(fork.box.spec.desktop.server).toBe(DESKTOP);
    expect(fork.replay.stopped_at).toBeNull();
    expect(fork.replay.truncated).toBe(false);
    expect(fork.replay.ok).toBe(fork.replay.attempted);
    expect(fork.replay.skipped.map((s: any) => s.kind)).toEqual(expect.arrayContaining(["file_written", "clipboard_set"]));
    for (const s of fork.replay.skipped) expect(typeof s.why).toBe("string");

    const again = await json(await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: { mode: "replay" }, headers: { "idempotency-key": "fork-once" } }));
    expect(again.box.id).toBe(fork.box.id);

    const forkEntries = await settleFrames(fork.box.id, 800);
    expect(forkEntries[0].event).toBe("box_created");
    expect(forkEntries.find((e) => e.event === "forked_from")?.data).toMatchObject({ box: source.id });
    const forkFrames = forkEntries.filter((e) => e.event === "frame");
    const end = forkFrames[forkFrames.length - 1];
    const a = await frameBytes(source.id, lastFrame);
    const b = await frameBytes(fork.box.id, end.frame);
    expect(differingPixels(a, b)).toBeLessThan(1280 * 800 * 0.005);
  });

  it("fork up_to stops the replay at that entry, and snapshot is refused", async () => {
    const entries = await trace(source.id);
    const firstType = entries.find((e) => e.event === "acted" && e.data.step.type === "type");
    const res = await json(await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: { up_to: firstType.seq } }));
    expect(res.replay.attempted).toBe(entries.filter((e) => e.event === "acted" && e.seq <= firstType.seq).length);
    const page = await Page.open(server, res.box.id);
    expect(await page.evaluate("document.querySelector('#name').value")).toBe("Ada Lovelace");
    expect(await page.evaluate("document.querySelector('#city').value")).toBe("");
    page.close();
    const snap = await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: { mode: "snapshot" } });
    expect(snap.status).toBe(400);
    expect((await json(snap)).code).toBe("unsupported");
  });

  it("fork stops at the first step that fails", async () => {
    const box = await launch();
    // The file write is not replayed (its bytes are not kept), so reading it fails in the fork.
    await server.api(`/v1/boxes/${box.id}/files`, {
      method: "PUT",
      json: { path: "/tmp/needed.txt", contents_base64: Buffer.from("x").toString("base64") },
    });
    const ran = await json(await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "move", to: { x: 9, y: 9 } }, { type: "read_file", path: "/tmp/needed.txt" }, { type: "move", to: { x: 10, y: 10 } }] },
    }));
    expect(ran.stopped_at).toBeNull();
    const res = await json(await server.api(`/v1/boxes/${box.id}/fork`, { method: "POST", json: {} }));
    const entries = await trace(box.id);
    const read = entries.find((e) => e.event === "acted" && e.data.step.type === "read_file");
    expect(res.replay.stopped_at).toBe(read.seq);
    expect(res.replay.attempted).toBe(2);
    expect(res.replay.ok).toBe(1);
    expect(res.replay.skipped.map((x: any) => x.kind)).toContain("file_written");
  });

  it("keeps the trace after the box is removed, and a removed box can be forked", async () => {
    await server.api(`/v1/boxes/${source.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    expect((await server.api(`/v1/boxes/${source.id}`)).status).toBe(410);
    const entries = await trace(source.id);
    expect(entries[entries.length - 1]).toMatchObject({ event: "gone", data: { reason: "removed" } });
    expect((await server.api(`/v1/boxes/${source.id}/trace/frames/${lastFrame}`)).status).toBe(200);
    const fork = await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: { up_to: 3 } });
    expect(fork.status).toBe(200);
  });

  it("loses nothing acknowledged when the server is killed with -9 (local store)", async () => {
    const box = await launch();
    const ack = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "move", to: { x: 1, y: 1 } }, { type: "move", to: { x: 2, y: 2 } }, { type: "cursor" }] },
    });
    expect(ack.status).toBe(200);
    const before = await trace(box.id);
    await server.stop("SIGKILL");
    server = await server.restart();
    const after = await trace(box.id);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.filter((e) => e.event === "acted")).toHaveLength(3);
  });
});
