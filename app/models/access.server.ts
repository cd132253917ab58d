import { keyById } from "./key.server";
import { type Role, atLeast } from "./roles";
import { liveSession, liveSessionIdsOf } from "./session.server";
import { sessionTag } from "./ticket.server";
import { roleIn } from "./workspace.server";

// Whether a principal may still reach a box: checked when a socket opens, and again for every
// open socket when its principal's access changes (principal-changes.server.ts). A ticket or a
// session cookie proves who someone was when it was made; this asks the store who they are now.

export type Access =
  | { ok: true; /** When this access ends by itself (a key's expiry); the socket closes then. */ untilMs?: number }
  | { ok: false; /** `ended`: the principal is gone; `role`: it remains but may not do this. */ lost: "ended" | "role"; why: string };

const gone = (why: string): Access => ({ ok: false, lost: "ended", why });

/**
 * Whether `issuer` (`server`, `user:<id>`, `key:<id>`) may still use `need` on what the workspace
 * `owner` owns; `sessionId`, when given, must still be a live session of that person.
 */
export async function principalAccess(issuer: string, owner: string | null, need: Role, sessionId?: string): Promise<Access> {
  if (issuer === "server") return { ok: true };
  if (!owner) return gone("this box belongs to no workspace; only the server token reaches it");
  if (issuer.startsWith("key:")) {
    const key = await keyById(issuer.slice(4));
    const now = Date.now();
    if (!key || key.workspace_id !== owner) return gone("the API key that opened this does not reach the box");
    if (key.revoked_at_ms !== null) return gone("the API key that opened this was revoked");
    if (key.expires_at_ms !== null && key.expires_at_ms <= now) return gone("the API key that opened this has expired");
    // A key acts with the member role: enough for watching and for control.
    if (!atLeast("member", need)) return { ok: false, lost: "role", why: `an API key acts as a member, not ${need}` };
    return { ok: true, untilMs: key.expires_at_ms ?? undefined };
  }
  if (issuer.startsWith("user:")) {
    const userId = issuer.slice(5);
    if (sessionId) {
      const session = await liveSession(sessionId);
      if (!session || session.user_id !== userId) return gone("the session that opened this has ended; sign in again");
    }
    const role = await roleIn(owner, userId);
    if (!role) return gone("you are no longer a member of the box's workspace");
    if (!atLeast(role, need)) return { ok: false, lost: "role", why: `your role is now ${role}; this needs ${need}` };
    return { ok: true };
  }
  return gone("the ticket names an issuer this server does not know");
}

/**
 * The live session a ticket's tag names, among its person's sessions; `null` when none does
 * (the session ended), undefined when the ticket names no session (a key, the server, /v1).
 */
export async function sessionOfTicket(issuer: string, tag: string | undefined): Promise<string | null | undefined> {
  if (tag === undefined) return undefined;
  if (!issuer.startsWith("user:")) return null;
  for (const id of await liveSessionIdsOf(issuer.slice(5))) if (sessionTag(id) === tag) return id;
  return null;
}
