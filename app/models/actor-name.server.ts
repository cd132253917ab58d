import { db } from "~/utils/db.server";
import { type Actor, issuerOf } from "./actor";
import type { TraceActor } from "./trace-types.server";
import type { CreatedBy } from "~/protocol/box-console";

// The name people know an actor by: a person's name, a key's name, or "server token". Written
// down with what the actor did (a box's creator, a trace entry's and an event's `by_name`), so
// it still reads right after the key is revoked or the person leaves.

const cache = new Map<string, { name: string; at: number }>();
const CACHE_MS = 30_000;

/** The server's own doing: the reaper, a grace timer, a launch, adopting boxes at start. */
export const SERVER_ITSELF: Actor = { kind: "server" };

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

/** The name of a server actor: its own doing, the server token, or an open-mode caller. */
function serverName(actor: Extract<Actor, { kind: "server" }>): string {
  return actor.via === "open" ? "open mode" : actor.via === "token" ? "server token" : "server";
}

/** Who an actor is, by name. */
export async function actorIdentity(actor: Actor): Promise<CreatedBy> {
  const id = issuerOf(actor);
  return { kind: kindOfIssuer(id), id, name: actor.kind === "server" ? serverName(actor) : await issuerName(id) };
}

/**
 * The seed's trace actor for what this actor does: a person through their console session (its
 * pages, or /v1 with the session), an agent through a key or the server token, the server for its
 * own doing.
 */
export function traceActorOf(actor: Actor): TraceActor {
  if (actor.kind === "server") return actor.via ? "agent" : "server";
  return actor.via === "session" ? "person" : "agent";
}

/** Who caused something, as trace entries and events carry it in `data`. */
export interface ByFields {
  /** `user:<id>`, `key:<id>` or `server`. */
  by: string;
  /** The person's or key's name at that moment; "server token", "open mode" or "server". */
  by_name: string;
}

export async function byFields(actor: Actor): Promise<ByFields> {
  const by = issuerOf(actor);
  // A name that cannot be looked up now (the store failing) leaves the id: the record still says who.
  return { by, by_name: actor.kind === "server" ? serverName(actor) : await issuerName(by).catch(() => by) };
}

/** The trace actor and `by` fields of what an actor does. */
export async function attribution(actor: Actor): Promise<{ actor: TraceActor; data: ByFields }> {
  return { actor: traceActorOf(actor), data: await byFields(actor) };
}
