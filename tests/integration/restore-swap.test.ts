import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { holmCli } from "../support/holm-cli";
import { ON_POSTGRES } from "../support/postgres";
import { type TestServer, startServer } from "../support/server";
import { apiAs } from "../support/workspaces";

// `holm restore --force` replaces a state directory's store only once the archive is checked;
// then the old files go and the new come in. When that swap fails part way (here: the old
// `frames` is a mount point, a directory on another disk, which cannot be removed or moved), the
// directory must be left as it was, not without a store or with the new store beside the old
// key. A real server's `local` store and the built CLI (in a mount namespace of its own).

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-restore-swap-"));
const stateDir = path.join(work, "state");
const archive = path.join(work, "before-bob.tar.gz");
let server: TestServer;
let key: string;

const users = () => {
  const db = new SQLite(path.join(stateDir, "holm.db"), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('select email from "user" order by email').pluck().all() as string[]).join(",");
  } finally {
    db.close();
  }
};

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: stateDir });
  const c = consoleClient(server);
  const ada = await c.signUp("ada@example.com", "A");
  key = (await c.createKey(ada, "agent")).secret;
  const ran = await holmCli(work, ["backup", archive, "--state-dir", stateDir]);
  expect(ran.code, ran.stderr).toBe(0);
  await c.form(ada, "/settings", { intent: "signups", open: "true", csrf: c.csrfIn(await c.page(ada, "/settings")) });
  await c.signUp("bob@example.com", "B");
  await server.stop();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("holm restore --force whose swap fails part way", () => {
  it("leaves the state directory as it was: the same store (with bob), the same key, and a server starts on it", async () => {
    const keyBefore = fs.readFileSync(path.join(stateDir, "secret.key"));
    const mounted = path.join(work, "mounted.key");
    fs.writeFileSync(mounted, keyBefore, { mode: 0o600 });
    expect(users()).toBe("ada@example.com,bob@example.com");
    const ran = await holmCli(work, ["restore", archive, "--state-dir", stateDir, "--force"], {}, [mounted, path.join(stateDir, "secret.key")]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(1);
    expect(ran.stderr).toMatch(/nothing was replaced/);
    expect(fs.existsSync(path.join(stateDir, "holm.db")), `left: ${fs.readdirSync(stateDir).join(", ")}`).toBe(true);
    expect(users()).toBe("ada@example.com,bob@example.com");
    expect(fs.readFileSync(path.join(stateDir, "secret.key"))).toEqual(keyBefore);
    expect(fs.readdirSync(stateDir).filter((n) => n.startsWith(".holm-restore-"))).toEqual([]);
    server = await server.restart();
    expect((await apiAs(server, key)("/v1/boxes")).status).toBe(200);
  }, 120_000);

  it("cut off by kill -9 in the middle of its renames: no server starts on the half-swapped directory (not as a fresh one), and says where the old files are", async () => {
    await server.stop();
    // What the swap leaves when killed after moving the old store and key aside, before the new
    // ones are in: the aside directory with its marker (cli/local/restore.ts swapIn).
    const aside = path.join(stateDir, ".holm-restore-old-cut");
    fs.mkdirSync(aside);
    fs.writeFileSync(path.join(aside, "restore-unfinished"), "");
    for (const name of fs.readdirSync(stateDir).filter((n) => n === "secret.key" || n.startsWith("holm.db"))) fs.renameSync(path.join(stateDir, name), path.join(aside, name));
    const err = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: stateDir }).then(
      async (s) => (await s.stop(), "started"),
      (e: Error) => e.message,
    );
    expect(err).toMatch(/a holm restore into .* was cut off while it swapped the files: the old state's files are in .*\.holm-restore-old-cut/);
    // Nothing made in their place: an empty store and a new key would open none of the old secrets.
    expect(fs.readdirSync(stateDir).filter((n) => n === "secret.key" || n.startsWith("holm.db"))).toEqual([]);
    // `holm doctor`, what an operator runs when the server will not start, says the same (it said
    // "store ok: holm.db does not exist yet: the first start makes it").
    const doctor = await holmCli(work, ["--json", "doctor"], { HOLM_STATE_DIR: stateDir });
    const store = JSON.parse(doctor.stdout).checks.filter((c: any) => c.area === "store");
    expect(store[0], doctor.stdout).toMatchObject({ level: "fail", says: expect.stringMatching(/cut off while it swapped the files: the old state's files are in .*\.holm-restore-old-cut/) });
    expect(doctor.code).toBe(1);
    // Done as the message says: the server starts on the old state, bob's account and the key in it.
    for (const name of fs.readdirSync(aside).filter((n) => n !== "restore-unfinished")) fs.renameSync(path.join(aside, name), path.join(stateDir, name));
    fs.rmSync(aside, { recursive: true });
    expect(users()).toBe("ada@example.com,bob@example.com");
    server = await server.restart();
    expect((await apiAs(server, key)("/v1/boxes")).status).toBe(200);
  }, 120_000);
});
