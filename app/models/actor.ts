import type { Role } from "./roles";

// Who is calling, as the domain sees it (no HTTP here: app/edge/auth.server.ts finds the
// actor of a request).

/**
 * Who is calling: the server token, or a workspace through a key or a person's session. A
 * session actor carries its session's id (never sent anywhere), so what it opens (viewer
 * tickets, sockets) ends when that session does. A server actor with `via` came in from outside
 * (the server token, CRON_SECRET, or a loopback caller in open mode); without it, it is the
 * server's own doing (the reaper, a grace timer, a launch), which the trace records as such.
 */
export type Actor =
  | { kind: "server"; via?: "token" | "open" }
  | { kind: "workspace"; workspaceId: string; role: Role; via: "key" | "session"; userId?: string; keyId?: string; sessionId?: string };

export type WorkspaceActor = Extract<Actor, { kind: "workspace" }>;

/** The workspace that owns what this actor creates; undefined for the server token. */
export function ownerOf(actor: Actor): string | undefined {
  return actor.kind === "workspace" ? actor.workspaceId : undefined;
}

/** Who issued something: `server`, `user:<id>` or `key:<id>`. */
export function issuerOf(actor: Actor): string {
  if (actor.kind === "server") return "server";
  return actor.userId ? `user:${actor.userId}` : `key:${actor.keyId}`;
}
