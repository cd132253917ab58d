import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { serverWithOneBox } from "../support/one-box";
import { type TestServer, docker, json } from "../support/server";

// What a box prints goes to the engine's log of its container, a file on the host's disk beside
// every other box's and the server's. Anything in the box can print (a page's console is not it,
// but any process, as root through exec, writing to its init's stdout): a box that printed
// without end filled the disk. Its log is capped now (json-file, 8 MiB a file, two files: app/runtime/runtime.ts BOX_LOG), as
// Kubernetes caps a container's.

let server: TestServer;
let box: any;

serverWithOneBox((s, b) => {
  server = s;
  box = b;
});

const MIB = 1024 ** 2;

/** The bytes the engine keeps of the box's log on the host: the file and its rotated ones. */
async function logBytes(): Promise<number> {
  const info = await docker.getContainer(`holm-${box.id}`).inspect();
  const file = info.LogPath;
  expect(file, "the engine keeps the box's log in a file").toBeTruthy();
  const dir = path.dirname(file);
  let n = 0;
  for (const name of fs.readdirSync(dir)) if (name.startsWith(path.basename(file))) n += fs.statSync(path.join(dir, name)).size;
  return n;
}

describe("a box that prints without end", () => {
  it("keeps a bounded log on the host (60 MB printed, at most 16 MiB kept), and the box lives on", async () => {
    const out = await json(
      await server.api(`/v1/boxes/${box.id}/exec`, {
        method: "POST",
        json: { argv: ["sh", "-c", "yes 'a box printing a line of text over and over, filling its log' | head -c 60000000 > /proc/1/fd/1"], timeout_ms: 120_000 },
        signal: AbortSignal.timeout(150_000),
      }),
    );
    expect(out.code, JSON.stringify(out)).toBe(0);
    const kept = await logBytes();
    expect(kept, `${(kept / MIB).toFixed(1)} MiB kept`).toBeLessThanOrEqual(16 * MIB + 64 * 1024);
    // The box still answers, and its log still reads (the server reads its own lines from it).
    expect((await json(await server.api(`/v1/boxes/${box.id}`))).state).toBe("ready");
    const shot = await server.api(`/v1/boxes/${box.id}/screens/0/frame`);
    expect(shot.status).toBe(200);
  }, 180_000);
});
