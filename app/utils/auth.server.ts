import { createHash, timingSafeEqual } from "node:crypto";
import { checkKey } from "~/models/key.server";
import type { Role } from "~/models/roles";
import { ApiError } from "./api-error.server";
import { env } from "./env.server";

/**
 * Who is calling: the server token, or a workspace through a key or a person's session. A
 * session actor carries its session's id (never sent anywhere), so what it opens (viewer
 * tickets, sockets) ends when that session does.
 */
export type Actor =
  | { kind: "server" }
  | { kind: "workspace"; workspaceId: string; role: Role; via: "key" | "session"; userId?: string; keyId?: string; sessionId?: string };

/** The workspace that owns what this actor creates; undefined for the server token. */
export function ownerOf(actor: Actor): string | undefined {
  return actor.kind === "workspace" ? actor.workspaceId : undefined;
}

/** Who issued something: `server`, `user:<id>` or `key:<id>`. */
export function issuerOf(actor: Actor): string {
  if (actor.kind === "server") return "server";
  return actor.userId ? `user:${actor.userId}` : `key:${actor.keyId}`;
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
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** The role a request needs by default: reading is for viewers, changing for members. */
function defaultRole(request: Request): Role {
  return request.method === "GET" || request.method === "HEAD" ? "viewer" : "member";
}

/**
 * Resolves the caller of a /v1 route. The server token acts for everything; a `holm_sk_` key
 * acts as its workspace with the member role. With no HOLM_SERVER_TOKEN and no key, a caller
 * that reaches the server (it binds loopback by default) is the server actor.
 */
export async function requireActor(request: Request, need: Role = defaultRole(request)): Promise<Actor> {
  const token = env().HOLM_SERVER_TOKEN;
  const given = bearer(request);
  let actor: Actor;
  if (given?.startsWith("holm_sk_")) {
    const check = await checkKey(given);
    if (!check.ok) {
      throw unauthorized(check.why === "unknown" ? "the API key is not valid" : `the API key is ${check.why}`);
    }
    actor = { kind: "workspace", workspaceId: check.key.workspace_id, role: "member", via: "key", keyId: check.key.id };
  } else if (!token) {
    if (given !== undefined || request.headers.has("authorization")) {
      // A token that this server does not have is a mistake worth reporting.
      throw unauthorized("this server has no token; send a holm_sk_ key or no Authorization header");
    }
    return { kind: "server" };
  } else if (!given) {
    throw unauthorized("this server needs Authorization: Bearer <token or holm_sk_ key>");
  } else if (safeEqual(given, token)) {
    return { kind: "server" };
  } else {
    throw unauthorized("the bearer token is not valid");
  }
  if (RANK[actor.role] < RANK[need]) {
    throw new ApiError("denied", `this needs the ${need} role; the caller is a ${actor.role}`);
  }
  return actor;
}

/** For scheduled-work routes: the server token, or CRON_SECRET. */
export async function requireScheduler(request: Request): Promise<Actor> {
  const cron = env().CRON_SECRET;
  const given = bearer(request);
  if (cron && given && safeEqual(given, cron)) return { kind: "server" };
  const actor = await requireActor(request, "viewer");
  if (actor.kind !== "server") throw new ApiError("denied", "scheduled work needs the server token or CRON_SECRET");
  return actor;
}
