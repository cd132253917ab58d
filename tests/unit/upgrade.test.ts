import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationProvider } from "../../db/migrations";
import { storeModules } from "../support/store-modules";

// Upgrades: a `local` store made and filled by an older release (tests/fixtures/upgrade/, from
// scripts/make-upgrade-fixture.mjs: that commit's own migrations and models wrote every row) is
// opened with today's code, which runs the newer migrations, and every row reads back through
// today's models: accounts, sessions, keys, invitations, settings, secrets, browser states,
// runtimes, webhooks and their deliveries, events, boxes, images, the trace and its frames.

const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/upgrade");
const made = JSON.parse(fs.readFileSync(path.join(FIXTURE, "store.json"), "utf8"));
const { tempDir, openStore } = storeModules("upgrade");
const savedKey = process.env.HOLM_SECRET_KEY;
let dir: string;

/** The fixture as a state directory: the SQL loaded into holm.db, the frames as files. */
function unpack(): string {
  const d = tempDir();
  const db = new SQLite(path.join(d, "holm.db"));
  db.exec(fs.readFileSync(path.join(FIXTURE, "store.sql"), "utf8"));
  db.close();
  for (const [hash, b64] of Object.entries(made.frames as Record<string, string>)) {
    fs.mkdirSync(path.join(d, "frames", hash.slice(0, 2)), { recursive: true });
    fs.writeFileSync(path.join(d, "frames", hash.slice(0, 2), `${hash}.png`), Buffer.from(b64, "base64"));
  }
  return d;
}

beforeAll(async () => {
  dir = unpack();
  process.env.HOLM_SECRET_KEY = made.server_key;
  process.env.HOLM_CONFIG_FILE = "none";
  await openStore("local", dir);
}, 30_000);

afterAll(() => {
  if (savedKey === undefined) delete process.env.HOLM_SECRET_KEY;
  else process.env.HOLM_SECRET_KEY = savedKey;
  delete process.env.HOLM_CONFIG_FILE;
});

// Importing the model graph takes seconds on a busy machine: a test waits for that, not for the store.
describe(`a store of ${made.commit} opened by this holm`, { timeout: 30_000 }, () => {
  it("held a row in every table of its release, and now has every migration", async () => {
    const before = new SQLite(":memory:");
    before.exec(fs.readFileSync(path.join(FIXTURE, "store.sql"), "utf8"));
    const tables = (before.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name != 'kysely_migration_lock'").pluck().all() as string[]);
    const empty = tables.filter((t) => (before.prepare(`select count(*) from "${t}"`).pluck().get() as number) === 0);
    expect(empty, "tables the fixture leaves empty").toEqual([]);
    const older = before.prepare("select name from kysely_migration").pluck().all() as string[];
    before.close();

    const now = new SQLite(path.join(dir, "holm.db"), { readonly: true });
    const ran = now.prepare("select name from kysely_migration order by name").pluck().all() as string[];
    now.close();
    const known = Object.keys(await migrationProvider.getMigrations());
    expect(ran.sort()).toEqual([...known].sort());
    // The fixture is older: the upgrade ran something.
    expect(known.filter((m) => !older.includes(m)).length).toBeGreaterThan(0);
  });

  it("keeps people, sessions, keys, members, invitations and settings", async () => {
    const users = await import("~/models/user.server");
    const sessions = await import("~/models/session.server");
    const keys = await import("~/models/key.server");
    const workspaces = await import("~/models/workspace.server");
    expect((await users.checkCredentials(made.ada.email, made.ada.password))?.id).toBe(made.ada.id);
    expect((await users.checkCredentials(made.bob.email, made.bob.password))?.id).toBe(made.bob.id);
    expect(await users.checkCredentials(made.ada.email, "not the password")).toBeUndefined();
    expect((await sessions.validateSession(made.session))?.user.id).toBe(made.ada.id);
    const check = await keys.checkKey(made.key.secret);
    expect(check).toMatchObject({ ok: true, key: { id: made.key.id, workspace_id: made.workspace, name: "agent" } });
    expect((await keys.listKeys(made.workspace)).map((k) => k.id)).toEqual([made.key.id]);
    const members = await workspaces.membersOf(made.workspace);
    expect(members.map((m) => [m.email, m.role]).sort()).toEqual([["ada@example.com", "owner"], ["bob@example.com", "member"]]);
    expect((await workspaces.pendingInvitations(made.workspace)).map((i) => i.email)).toEqual(["carol@example.com"]);
    expect(await users.signupsOpen()).toBe(true);
  });

  it("opens the sealed values with the same server key: secrets, browser states, runtimes, webhooks", async () => {
    const secrets = await import("~/models/secret-store.server");
    const states = await import("~/models/browser-state.server");
    const runtimes = await import("~/models/runtime-store.server");
    const webhooks = await import("~/models/webhook.server");
    expect(await secrets.secretValue(made.workspace, made.secret.name)).toBe(made.secret.value);
    expect((await states.listStates(made.workspace)).map((s) => s.name)).toEqual([made.state.name]);
    const state = await states.stateToLoad(made.workspace, { name: made.state.name });
    expect(state.cookies).toHaveLength(made.state.cookies);
    const rt = await runtimes.getRuntime(made.runtime);
    expect(rt).toMatchObject({ name: made.runtime, provider: "docker", secrets_set: ["ca", "cert", "key"] });
    expect((await webhooks.listWebhooks(made.workspace)).map((w) => w.id)).toEqual([made.webhook.id]);
    expect((await webhooks.webhookTarget(made.webhook.id))?.secrets).toEqual([made.webhook.secret]);
  });

  it("lists boxes, events, deliveries and images, and reads the trace with its frames", async () => {
    const boxes = await import("~/models/box.server");
    const events = await import("~/models/event.server");
    const deliveries = await import("~/models/webhook-delivery.server");
    const images = await import("~/models/image.server");
    const trace = await import("~/models/trace.server");
    const actor = { kind: "workspace" as const, workspaceId: made.workspace, role: "owner" as const, via: "key" as const, keyId: made.key.id };
    const listed = await boxes.listBoxes(actor);
    expect(listed.map((b) => [b.id, b.state, b.name, b.labels])).toEqual([[made.boxes[0], "stopped", "fixture-0", { team: "web" }]]);
    expect(listed[0]).toMatchObject({ width: 1024, height: 768, spec: { desktop: { width: 1024, height: 768 } } });
    // The removed one is read too: answered as removed, with its reason.
    await expect(boxes.getBox(actor, made.boxes[1])).rejects.toThrow(`box ${made.boxes[1]} was removed: removed by its owner`);

    const evs = await events.listEvents({ owner: made.workspace, after: 0, limit: 100 });
    expect(evs.events.map((e) => [e.kind, e.box_id, e.data?.by_name])).toEqual([
      ["box.created", made.boxes[0], "agent"],
      ["box.created", made.boxes[1], "agent"],
      ["box.removed", made.boxes[1], "Ada"],
    ]);
    const sent = await deliveries.listDeliveries(made.workspace, made.webhook.id, 10);
    expect(sent.map((d) => d.status)).toEqual(["pending", "pending", "pending"]);
    expect((await images.listAllImages()).map((i) => i.image)).toEqual(["holm-x11:0123456789abcdef"]);

    const page = await trace.readTrace(made.boxes[0], { limit: 100 });
    expect(page.entries.map((e) => e.event)).toEqual(["box_created", "acted", "acted", "frame"]);
    const hashes = page.entries.filter((e) => e.frame).map((e) => e.frame!);
    expect(hashes.sort()).toEqual(Object.keys(made.frames).sort());
    for (const h of hashes) expect((await trace.readFrame(h))?.toString("base64")).toBe(made.frames[h]);
    // And the upgraded store takes new writes: the next entry follows on.
    const next = await trace.recordEntry(made.boxes[0], { actor: "agent", event: "acted", data: { step: { type: "cursor" } } });
    expect(next.seq).toBe(page.entries.at(-1)!.seq + 1);
  });

  it("refuses a store a newer holm migrated: no downgrade (holm doctor says so too)", async () => {
    const newer = unpack();
    const db = new SQLite(path.join(newer, "holm.db"));
    db.prepare("insert into kysely_migration (name, timestamp) values ('9999-from-the-future', '2030-01-01T00:00:00.000Z')").run();
    db.close();
    await expect(openStore("local", newer)).rejects.toThrow(/9999-from-the-future/);
  });
});
