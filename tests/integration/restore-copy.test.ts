import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ON_POSTGRES } from "../support/postgres";
import { ROOT, type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";

// A backup restored on the host its server still runs on (to test the backup). The store and the
// server key are the original's, so by default a server on the copy is the same server to the
// engine: it takes back the original's boxes and acts on them (what a restore after a loss needs).
// `holm restore` says so; `--as-new-server` makes a copy that leaves them alone. Two real boxes.

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-restore-copy-"));
const archive = path.join(work, "live.tar.gz");
let source: TestServer;
let copy: TestServer | undefined;
let b1: string;
let b2: string;

function holm(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "build/cli/holm.js"), ...args], {
      cwd: work,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", HOLM_CONFIG_FILE: "none", HOLM_STORAGE_BACKEND: "local", HOLM_ROOT: ROOT },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function launch(server: TestServer): Promise<string> {
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  return box.id;
}

const remove = (server: TestServer, id: string) => server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
const stateOn = async (server: TestServer, id: string) => (await json(await server.api(`/v1/boxes/${id}`))).state;

beforeAll(async () => {
  source = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "src") });
  b1 = await launch(source);
  const ran = await holm(["backup", archive, "--state-dir", source.stateDir]);
  expect(ran.code, ran.stderr).toBe(0);
  b2 = await launch(source);
}, 120_000);

afterAll(async () => {
  await copy?.stop();
  await source?.stop();
  await removeTestBoxes();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("a backup restored beside its live server", () => {
  it("holm restore says a server on the copy acts on the original's boxes, and how not to", async () => {
    const ran = await holm(["restore", archive, "--state-dir", path.join(work, "after-loss")]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/warning: a server started on this copy with the same engine takes back and acts on the boxes of the server the backup was taken from/);
    expect(ran.stderr).toMatch(/stop that server first, or restore with --as-new-server/);
  });

  it("--as-new-server: a server on the copy takes none of the original's boxes and cannot remove them", async () => {
    const ran = await holm(["restore", archive, "--state-dir", path.join(work, "test-restore"), "--as-new-server"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/restored .*: 1 box/);
    expect(ran.stderr).toMatch(/as a new server: its 1 box recorded live is marked removed here/);
    expect(ran.stderr).not.toMatch(/warning: a server started on this copy/);

    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "test-restore"), HOLM_SERVER_TOKEN: source.token });
    // Let its first reaper sweep run too: it must not act on the original's containers either.
    await new Promise((r) => setTimeout(r, 3000));
    expect(copy.logs()).not.toMatch(/adopted box_/);
    const listed = await json(await copy.api("/v1/boxes"));
    expect(listed.boxes.map((b: any) => b.id)).not.toContain(b2);
    expect(listed.boxes.filter((b: any) => b.state !== "gone").map((b: any) => b.id)).toEqual([]);
    // The box the backup recorded is history here, and says why.
    const gone = await copy.api(`/v1/boxes/${b1}`);
    expect(gone.status).toBe(410);
    expect((await json(gone)).message).toMatch(/restored as a new server/);
    expect((await remove(copy, b2)).status).toBe(404);
    expect((await remove(copy, b1)).status).toBe(410);
    await copy.stop();
    copy = undefined;

    // The original still has both, running.
    expect(await stateOn(source, b1)).toBe("ready");
    expect(await stateOn(source, b2)).toBe("ready");
  }, 90_000);

  it("restored after a loss (the original stopped): a server on the copy takes back both boxes", async () => {
    await source.stop();
    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "after-loss"), HOLM_SERVER_TOKEN: source.token });
    expect(copy.logs()).toContain(`adopted ${b2} (ready) from the docker runtime`);
    expect(await stateOn(copy, b1)).toBe("ready");
    expect(await stateOn(copy, b2)).toBe("ready");
    expect((await remove(copy, b1)).status).toBe(200);
    await copy.stop();
    copy = undefined;
  }, 90_000);

  it("the new server's boxes carry its own id, and its own backup keeps it", async () => {
    const dir = path.join(work, "test-restore");
    const own = fs.readFileSync(path.join(dir, "server-id"), "utf8").trim();
    copy = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: dir });
    const c1 = await launch(copy);
    const [found] = await docker.listContainers({ all: true, filters: { label: [`holm.box=${c1}`] } });
    expect(found?.Labels["holm.server"]).toBe(own);
    const again = path.join(work, "copy.tar.gz");
    expect((await holm(["backup", again, "--state-dir", dir])).code).toBe(0);
    const ran = await holm(["restore", again, "--state-dir", path.join(work, "copy-of-copy")]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(fs.readFileSync(path.join(work, "copy-of-copy", "server-id"), "utf8").trim()).toBe(own);
  }, 90_000);
});
