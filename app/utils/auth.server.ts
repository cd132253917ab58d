import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError } from "./api-error.server";
import { env } from "./env.server";

/** Who is calling. Workspace keys and sessions resolve to a workspace actor (a later issue). */
export type Actor =
  | { kind: "server" }
  | { kind: "workspace"; workspaceId: string; role: "owner" | "admin" | "member" | "viewer"; via: "key" | "session" };

/** The workspace that owns what this actor creates; undefined for the server token. */
export function ownerOf(actor: Actor): string | undefined {
  return actor.kind === "workspace" ? actor.workspaceId : undefined;
}

/** Compares two secrets in constant time whatever their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

function bearer(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

const unauthorized = (message: string) => new ApiError("unauthorized", message);

/**
 * Resolves the caller. With no HOLM_SERVER_TOKEN the server trusts every caller that reaches it
 * (it binds loopback by default) and treats them as the server actor.
 */
export async function requireActor(request: Request): Promise<Actor> {
  const token = env().HOLM_SERVER_TOKEN;
  const given = bearer(request);
  if (!token) return { kind: "server" };
  if (!given) throw unauthorized("this server needs Authorization: Bearer <token>");
  if (safeEqual(given, token)) return { kind: "server" };
  throw unauthorized("the bearer token is not valid");
}

/** For scheduled-work routes: the server token, or CRON_SECRET. */
export async function requireScheduler(request: Request): Promise<Actor> {
  const cron = env().CRON_SECRET;
  const given = bearer(request);
  if (cron && given && safeEqual(given, cron)) return { kind: "server" };
  const actor = await requireActor(request);
  if (actor.kind !== "server") throw new ApiError("denied", "scheduled work needs the server token or CRON_SECRET");
  return actor;
}
