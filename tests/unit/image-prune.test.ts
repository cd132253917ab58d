import { afterAll, describe, expect, it } from "vitest";
import type { EngineImage, ImageRequest, Runtime } from "~/runtime/runtime";
import { storeModules } from "../support/store-modules";

// Which old box images prune removes (ADR 0017), against a real SQLite store and a stand-in
// engine (setRuntimes): the rules one by one, including (a), the tags a spec would get today,
// which the integration test (real engine, images it loads itself) cannot make.

const stores = storeModules("image-prune");
const saved = process.env.HOLM_IMAGE_PRUNE_AFTER;
afterAll(() => {
  if (saved === undefined) delete process.env.HOLM_IMAGE_PRUNE_AFTER;
  else process.env.HOLM_IMAGE_PRUNE_AFTER = saved;
});

const DAY = 86_400_000;
/** Today's tag for a request, as the stand-in engine computes it. */
const current = (req: ImageRequest) => `holm-x11:cur${req.packages.join("-")}`;

async function setUp(list: (base: string) => EngineImage[], after = "3d") {
  process.env.HOLM_IMAGE_PRUNE_AFTER = after;
  const { dbm } = await stores.openStore("memory");
  const { setRuntimes } = await import("~/runtime/index.server");
  const { baseImageTag } = await import("~/runtime/image-source.server");
  const removed: string[] = [];
  const engine = list(baseImageTag());
  const fake = {
    name: "docker",
    imageStatus: async (req: ImageRequest) => ({ image: current(req), present: true }),
    listBoxImages: async () => engine,
    removeImage: async (image: string) => {
      if (image.includes("busy")) throw Object.assign(new Error("conflict: a container uses it"), { statusCode: 409 });
      removed.push(image);
      return true;
    },
  } as unknown as Runtime;
  setRuntimes(new Map([["docker", fake]]));
  const prune = await import("~/models/image-prune.server");
  const events = await import("~/models/event.server");
  return { db: dbm.db(), removed, prune, events };
}

describe("pruning old box images", () => {
  it("removes only old tags no spec would get today, no live box runs and no build holds; a container's is skipped", async () => {
    const now = Date.now();
    const old = now - 10 * DAY;
    const { db, removed, prune, events } = await setUp((base) => [
      { image: current({ features: [], packages: [] }), created_at_ms: old }, // the default spec's: (a)
      { image: current({ features: [], packages: ["gimp"] }), created_at_ms: old }, // an image row's spec: (a)
      { image: base, created_at_ms: old }, // today's base: (a)
      { image: "holm-x11:boxruns", created_at_ms: old }, // (b)
      { image: "holm-x11:young", created_at_ms: now - DAY }, // (c)
      { image: "holm-x11:building", created_at_ms: old }, // (d)
      { image: "holm-x11:busy", created_at_ms: old }, // the engine refuses: a container uses it
      { image: "holm-x11:stale", created_at_ms: old },
      { image: "holm-base:stale", created_at_ms: old },
      { image: "holm-x11:removedbox", created_at_ms: old },
    ]);
    const row = (image: string, state: string, packages: string[]) =>
      db
        .insertInto("image")
        .values({ runtime: "docker", digest: image.split(":")[1]!, image, state, reason: null, request_json: JSON.stringify({ features: [], packages }), spec_digest: null, owner: null, created_at_ms: old, built_at_ms: null })
        .execute();
    await row(current({ features: [], packages: ["gimp"] }), "built", ["gimp"]);
    await row("holm-x11:building", "building", ["vlc"]);
    await row("holm-x11:stale", "built", ["old-one"]);
    const box = (id: string, image: string, removed_at_ms: number | null, spec: unknown = { desktop: { features: [], packages: [] } }) =>
      db
        .insertInto("box")
        .values({ id, owner: null, runtime: "docker", runtime_ref: null, spec_digest: "x", spec_json: JSON.stringify(spec), placement_json: "{}", image, state: removed_at_ms ? "removed" : "stopped", reason: null, screens: 1, width: 1280, height: 800, persistent: 0, created_at_ms: old, expires_at_ms: now + DAY, idle_timeout_secs: null, last_used_ms: old, removed_at_ms })
        .execute();
    await box("box_a", "holm-x11:boxruns", null);
    await box("box_b", "holm-x11:removedbox", old);
    // A row from before specs had a desktop: its image is kept, and the prune goes on.
    await box("box_c", "holm-x11:boxruns", null, {});

    const out = await prune.pruneImages(now);
    expect(out.removed.sort()).toEqual(["holm-base:stale", "holm-x11:removedbox", "holm-x11:stale"]);
    expect(removed.sort()).toEqual(out.removed);
    expect(out.in_use).toEqual(["holm-x11:busy"]);
    // The pruned image's row goes; the others stay.
    const rows = (await db.selectFrom("image").select("image").execute()).map((r: { image: string }) => r.image).sort();
    expect(rows).toEqual(["holm-x11:building", current({ features: [], packages: ["gimp"] })].sort());
    const kinds = (await events.listEvents({ after: 0, limit: 100 })).events.filter((e) => e.kind === "image.removed");
    expect(kinds.map((e) => e.data?.image).sort()).toEqual(out.removed);
    expect(kinds[0]).toMatchObject({ runtime: "docker", data: { pruned: true, by: "server" } });
  });

  it("HOLM_IMAGE_PRUNE_AFTER=0 prunes nothing; a duration takes s, m, h or d", async () => {
    const { removed, prune } = await setUp(() => [{ image: "holm-x11:stale", created_at_ms: 0 }], "0");
    expect(await prune.pruneImages()).toEqual({ removed: [], in_use: [] });
    expect(removed).toEqual([]);
    const { parseEnv } = await import("~/utils/env.server");
    expect(parseEnv({})).toMatchObject({ HOLM_IMAGE_PRUNE_AFTER: 3 * DAY });
    expect(parseEnv({ HOLM_IMAGE_PRUNE_AFTER: "12h" })).toMatchObject({ HOLM_IMAGE_PRUNE_AFTER: 12 * 3600_000 });
    expect(parseEnv({ HOLM_IMAGE_PRUNE_AFTER: "90" })).toMatchObject({ HOLM_IMAGE_PRUNE_AFTER: 90_000 });
    expect(() => parseEnv({ HOLM_IMAGE_PRUNE_AFTER: "3 days" })).toThrow(/HOLM_IMAGE_PRUNE_AFTER/);
  });
});
