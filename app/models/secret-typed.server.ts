import { createHmac } from "node:crypto";
import { onClusterMessage, publish } from "~/utils/cluster.server";
import { db } from "~/utils/db.server";
import { log } from "~/utils/log.server";
import { seal, unseal } from "~/utils/seal.server";
import { derive } from "~/utils/secret.server";
import { onBeforeRemove } from "./box-record.server";

// The secret values typed into a box (fill, type), kept so answers about it mask them after the
// secret changes or goes (secret-mask.server.ts). In the store, sealed as secrets are: a page
// keeps what was typed across a server's restart, and any server of a cluster (ADR 0021) may
// answer about the box. Each server keeps a box's values a while; a value typed through another
// server is news (the "typed" message), and VALUES_TTL_MS covers lost news. They go with the box.

/** Values kept per box: the oldest go first. */
export const TYPED_PER_BOX = 64;
const PURPOSE = "box_typed_secret";
const VALUES_TTL_MS = 30_000;
const BOXES_KEPT = 5_000;

let tagKey: Buffer | undefined;
/** A keyed digest of a value: the store holds a value once per box without its plain hash. */
function tagOf(value: string): string {
  tagKey ??= Buffer.from(derive(`${PURPOSE}:tag`), "base64url");
  return createHmac("sha256", tagKey).update(value).digest("base64url");
}
const where = (boxId: string, tag: string) => `${PURPOSE}\u0000${boxId}\u0000${tag}`;

const kept = new Map<string, { at: number; values: Promise<ReadonlySet<string>> }>();

function forget(boxId: string, news: boolean) {
  kept.delete(boxId);
  if (news) void publish("typed", { box: boxId });
}

onClusterMessage("typed", (p) => {
  const box = (p as { box?: unknown } | null)?.box;
  if (typeof box === "string") kept.delete(box);
});

/** Every value typed into the box from a secret (only to mask them, never to give one). */
export function typedValues(boxId: string): Promise<ReadonlySet<string>> {
  const now = Date.now();
  const k = kept.get(boxId);
  if (k && now - k.at < VALUES_TTL_MS) return k.values;
  const read = (async () => {
    const rows = await db().selectFrom("box_typed_secret").select(["tag", "sealed"]).where("box_id", "=", boxId).execute();
    const out = new Set<string>();
    for (const row of rows) {
      try {
        out.add(unseal(PURPOSE, row.sealed, where(boxId, row.tag)).toString("utf8"));
      } catch (e) {
        log.error({ box: boxId }, `a typed secret: ${(e as Error).message}`);
      }
    }
    return out;
  })();
  if (kept.size >= BOXES_KEPT) kept.delete(kept.keys().next().value!);
  kept.set(boxId, { at: now, values: read });
  // A failed read is not kept: the next answer reads again.
  read.catch(() => kept.get(boxId)?.values === read && kept.delete(boxId));
  return read;
}

/** Records a value typed into the box from a secret, before it is typed. */
export async function rememberTyped(boxId: string, value: string): Promise<void> {
  if ((await typedValues(boxId)).has(value)) return;
  const tag = tagOf(value);
  await db()
    .insertInto("box_typed_secret")
    .values({ box_id: boxId, tag, sealed: seal(PURPOSE, value, where(boxId, tag)), created_at_ms: Date.now() })
    .onConflict((oc) => oc.columns(["box_id", "tag"]).doNothing())
    .execute();
  const older = await db()
    .selectFrom("box_typed_secret")
    .select("tag")
    .where("box_id", "=", boxId)
    .orderBy("created_at_ms", "desc")
    .orderBy("tag")
    .limit(10_000)
    .offset(TYPED_PER_BOX)
    .execute();
  if (older.length) {
    await db().deleteFrom("box_typed_secret").where("box_id", "=", boxId).where("tag", "in", older.map((r) => r.tag)).execute();
  }
  forget(boxId, true);
}

// A removed box answers nothing more about its pages: what was typed into it goes.
onBeforeRemove(async (row) => {
  await db().deleteFrom("box_typed_secret").where("box_id", "=", row.id).execute();
  forget(row.id, true);
});
