import { db } from "~/utils/db.server";
import { type Actor, issuerOf } from "./actor";
import type { CreatedBy } from "~/protocol/box-console";

// The name people know an actor by: a person's name, a key's name, or "server token". Written
// down with what the actor did (a box's creator, a trace entry's `by_name`), so it still reads
// right after the key is deleted or the person leaves.

const cache = new Map<string, { name: string; at: number }>();
const CACHE_MS = 30_000;

/** The name of an issuer (`user:<id>`, `key:<id>`, `server`); the id itself when unknown. */
export async function issuerName(issuer: string): Promise<string> {
  if (issuer === "server") return "server token";
  const hit = cache.get(issuer);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.name;
  let name: string | undefined;
  if (issuer.startsWith("user:")) {
    name = (await db().selectFrom("user").select("name").where("id", "=", issuer.slice(5)).executeTakeFirst())?.name;
  } else if (issuer.startsWith("key:")) {
    name = (await db().selectFrom("api_key").select("name").where("id", "=", issuer.slice(4)).executeTakeFirst())?.name;
  }
  const out = name ?? issuer;
  cache.set(issuer, { name: out, at: Date.now() });
  return out;
}

/** Forgets a cached name (a person renamed). */
export function forgetIssuerName(issuer: string) {
  cache.delete(issuer);
}

export function kindOfIssuer(issuer: string): CreatedBy["kind"] {
  return issuer.startsWith("user:") ? "person" : issuer.startsWith("key:") ? "key" : "server";
}

/** Who an actor is, by name. */
export async function actorIdentity(actor: Actor): Promise<CreatedBy> {
  const id = issuerOf(actor);
  return { kind: kindOfIssuer(id), id, name: await issuerName(id) };
}
