import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { ON_POSTGRES } from "../support/postgres";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { holmCli } from "../support/holm-cli";
import { type Api, apiAs } from "../support/workspaces";

// `holm backup` / `holm restore` (the built CLI, build/cli/holm-local.js) on a real server's
// `local` store: a backup taken while two agents drive a box (batches and frames landing in the
// trace), restored into a new state directory, and a server started on it: the trace (entries
// and frame bytes), the old key, the person and a sealed secret all still work. Then `holm
// doctor` on it. The restored server also reads a configuration file (HOLM_CONFIG_FILE) under its
// environment. The store is SQLite here whatever HOLM_TEST_STORE says (PostgreSQL is pg_dump's).

const work = fs.mkdtempSync(path.join(os.tmpdir(), "holm-backup-"));
let source: TestServer;
let restored: TestServer | undefined;
let asKey: Api;
let key: string;
let boxId: string;

function holm(args: string[], extra: Record<string, string> = {}) {
  return holmCli(work, args, extra);
}

async function traceOf(api: Api, id: string): Promise<any[]> {
  const all: any[] = [];
  let after: number | undefined;
  for (;;) {
    const res = await api(`/v1/boxes/${id}/trace?limit=500${after !== undefined ? `&after=${after}` : ""}`);
    expect(res.status).toBe(200);
    const page = await json(res);
    all.push(...page.entries);
    if (page.next === null) return all;
    after = page.next;
  }
}

const frameOf = async (api: Api, hash: string) => Buffer.from(await (await api(`/v1/boxes/${boxId}/trace/frames/${hash}`)).arrayBuffer());

beforeAll(async () => {
  source = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "source") });
  const c = consoleClient(source);
  const ada = await c.signUp("ada@example.com", "A");
  key = (await c.createKey(ada, "agent")).secret;
  asKey = apiAs(source, key);
  expect((await asKey("/v1/secrets/pw", { method: "PUT", json: { value: "s3cret-value" } })).status).toBe(200);
  const box = await json(await asKey("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
}, 120_000);

afterAll(async () => {
  await restored?.stop();
  await source?.stop();
  await removeTestBoxes();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(ON_POSTGRES)("holm backup and restore (local store)", () => {
  const archive = path.join(work, "holm.tar.gz");

  it("backs up while agents drive the box, and restores into a new state directory only", async () => {
    // Two agents, each a batch after the other: a page that differs every time, so frames land too.
    let driving = true;
    let batches = 0;
    const agent = async (n: number) => {
      for (let i = 0; driving; i++) {
        const url = `data:text/html,<h1 style="font-size:120px">${n}-${i}</h1>`;
        const res = await asKey(`/v1/boxes/${boxId}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "open_url", url, target: "current" }], want: ["frame"] } });
        expect(res.status).toBe(200);
        batches++;
      }
    };
    const agents = [agent(1), agent(2)];
    try {
      while (batches < 6) await new Promise((r) => setTimeout(r, 50));
      const before = (await traceOf(asKey, boxId)).length;
      const ran = await holm(["backup", archive, "--state-dir", source.stateDir]);
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stderr).toMatch(/backed up .*holm\.db: 1 box, 1 user, 1 key, \d+ trace entries, \d+ frames/);
      expect(ran.stderr).toContain("holds the server key");
      expect(fs.statSync(archive).mode & 0o777).toBe(0o600);
      const during = batches;
      while (batches < during + 4) await new Promise((r) => setTimeout(r, 50));
      const manifest = JSON.parse((await holm(["--json", "backup", path.join(work, "again.tar.gz"), "--state-dir", source.stateDir, "--no-key"])).stdout);
      expect(manifest).toMatchObject({ format: 1, store: "local", secret_key: false, frames_missing: 0 });
      expect(manifest.rows.trace_entry).toBeGreaterThan(before);
    } finally {
      driving = false;
      await Promise.all(agents);
    }

    // The running server's directory: refused, --force or not.
    const live = await holm(["restore", archive, "--state-dir", source.stateDir, "--force"]);
    expect(live.code).toBe(1);
    expect(live.stderr).toMatch(new RegExp(`has its store open in process .*${source.pid}.*stop it first`));
    // A directory with something in it: refused without --force.
    const busy = path.join(work, "busy");
    fs.mkdirSync(busy);
    fs.writeFileSync(path.join(busy, "notes.txt"), "mine");
    const refused = await holm(["restore", archive, "--state-dir", busy]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is not empty \(notes\.txt\).*--force/);

    const ok = await holm(["restore", archive, "--state-dir", path.join(work, "restored")]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toMatch(/restored .*holm\.db from .*: 1 box, 1 user, 1 key/);
    expect(fs.readdirSync(path.join(work, "restored")).sort()).toEqual(["frames", "holm.db", "secret.key"]);
    expect(fs.statSync(path.join(work, "restored", "secret.key")).mode & 0o777).toBe(0o600);
    expect(ok.stderr).not.toContain("HOLM_SECRET_KEY");
    // HOLM_SECRET_KEY set where it restores: a server with it would use that value and ignore the
    // archive's secret.key, so nothing sealed would open. Said, as for an archive without a key.
    const withEnvKey = await holm(["restore", archive, "--state-dir", path.join(work, "restored-env")], { HOLM_SECRET_KEY: "another-server-key-of-32-characters-or-more" });
    expect(withEnvKey.code, withEnvKey.stderr).toBe(0);
    expect(withEnvKey.stderr).toMatch(/warning: HOLM_SECRET_KEY is set: a server started with it uses that value, not the archive's secret\.key/);
    expect(withEnvKey.stderr).toMatch(/unset HOLM_SECRET_KEY for the server on .*restored-env/);
    // --force replaces what the archive brings (and a stale WAL), and leaves the rest.
    fs.writeFileSync(path.join(busy, "holm.db-wal"), "stale");
    const forced = await holm(["restore", archive, "--state-dir", busy, "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(fs.readdirSync(busy).sort()).toEqual(["frames", "holm.db", "notes.txt", "secret.key"]);
  }, 120_000);

  it("serves the restored store: the trace with its frames, the old key, the person, a sealed secret", async () => {
    const sourceTrace = await traceOf(asKey, boxId);
    const sourceFrames = new Map<string, Buffer>();
    for (const e of sourceTrace) if (e.frame && !sourceFrames.has(e.frame)) sourceFrames.set(e.frame, await frameOf(asKey, e.frame));
    await source.stop();
    // Its settings partly from a configuration file, under the environment: the file's store
    // settings lose to the environment's (or this server would start empty), its webhook one applies.
    const config = path.join(work, "holm.env");
    fs.writeFileSync(config, "HOLM_STORAGE_BACKEND=memory\nHOLM_STATE_DIR=/nonexistent\nHOLM_WEBHOOK_ALLOW_PRIVATE=1\n", { mode: 0o600 });
    restored = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_STATE_DIR: path.join(work, "restored"), HOLM_SERVER_TOKEN: source.token, HOLM_CONFIG_FILE: config });
    expect(restored.logs()).toContain(`configuration from ${config}: 1 setting(s), 2 overridden by the environment`);
    const asOld = apiAs(restored, key);
    expect((await asOld("/v1/webhooks", { method: "POST", json: { url: "http://127.0.0.1:9/hook", events: ["box.ready"] } })).status).toBe(200);

    const listed = await json(await asOld("/v1/boxes"));
    expect(listed.boxes.map((b: any) => b.id)).toContain(boxId);
    const trace = await traceOf(asOld, boxId);
    // A snapshot: the source's trace up to some entry, under load, and nothing else.
    expect(trace.length).toBeGreaterThan(5);
    expect(trace.length).toBeLessThan(sourceTrace.length);
    expect(trace).toEqual(sourceTrace.slice(0, trace.length));
    const frames = trace.filter((e) => e.frame);
    expect(frames.length).toBeGreaterThan(0);
    for (const e of frames) {
      const png = await frameOf(asOld, e.frame);
      expect(png.subarray(1, 4).toString()).toBe("PNG");
      expect(png.equals(sourceFrames.get(e.frame)!), e.frame).toBe(true);
    }

    const c = consoleClient(restored);
    await c.logIn("ada@example.com");
    // The sealed secret opens with the restored server key: the box types it.
    const box = await json(await asOld(`/v1/boxes/${boxId}`));
    expect(box.state).toBe("ready");
    const typed = await json(await asOld(`/v1/boxes/${boxId}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "type", secret_ref: "pw" }] } }));
    expect(typed, JSON.stringify(typed)).toMatchObject({ stopped_at: null, results: [{ ok: true, secret_ref: "pw" }] });
  }, 120_000);

  it("holm doctor: all current on the restored store, and a failure exits 1 with what to fix", async () => {
    const env = { HOLM_STATE_DIR: path.join(work, "restored"), HOLM_SERVER_TOKEN: source.token, HOLM_SERVER_ADDR: new URL(restored!.base).host };
    const ran = await holm(["--json", "doctor"], env);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    const { ok, checks } = JSON.parse(ran.stdout);
    expect(ok).toBe(true);
    const by = (area: string) => checks.filter((c: any) => c.area === area);
    expect(by("store")[0]).toMatchObject({ level: "ok", says: expect.stringMatching(/local: opens, \d+ migrations, all current/) });
    expect(by("engine")[0]).toMatchObject({ level: "ok", says: expect.stringMatching(/^Docker .* \(API [\d.]+\), cgroup v\d/) });
    expect(by("server")[0]).toMatchObject({ level: "ok", says: expect.stringContaining("answers 200") });
    for (const area of ["images", "disk", "clock", "config"]) expect(by(area).length, area).toBeGreaterThan(0);

    const broken = await holm(["doctor"], { ...env, HOLM_DOCKER_SOCKET: path.join(work, "no.sock") });
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/fail\s+engine\s+no Docker engine answers at .*no\.sock[\s\S]*fix: start dockerd/);
    const bad = await holm(["doctor"], { ...env, HOLM_SERVER_TOKEN: "short" });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/fail\s+config\s+invalid environment:\s+HOLM_SERVER_TOKEN: must be at least 16 characters/);
  }, 60_000);
});
