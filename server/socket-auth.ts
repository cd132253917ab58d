import type { Socket } from "socket.io";
import type { Actor } from "~/models/actor";
import { principalSeq } from "~/models/principal-changes.server";
import { type Role, atLeast } from "~/models/roles";
import { SESSION_COOKIE, readCookie, validateSession } from "~/models/session.server";
import { roleIn } from "~/models/workspace.server";
import { ApiError, isApiError } from "~/utils/api-error.server";
import { log } from "~/utils/log.server";

export type SessionActor = Actor & { kind: "workspace"; userId: string; sessionId: string };

/**
 * The person behind a socket.io handshake: the session cookie, and the workspace the client
 * names (or the session's current one), which the person must belong to with at least `need`.
 */
export async function sessionActor(socket: Socket, need: Role = "viewer"): Promise<SessionActor> {
  const token = readCookie(socket.handshake.headers.cookie, SESSION_COOKIE);
  const found = token ? await validateSession(token) : undefined;
  if (!found) throw new ApiError("unauthorized", "unauthorized");
  const workspace = String(socket.handshake.auth?.workspace ?? found.session.workspace_id ?? "");
  const role = await roleIn(workspace, found.user.id);
  if (!role) throw new ApiError("denied", "not a member of that workspace");
  if (!atLeast(role, need)) throw new ApiError("denied", `this needs the ${need} role; you are a ${role}`);
  return { kind: "workspace", workspaceId: workspace, role, via: "session", userId: found.user.id, sessionId: found.session.id };
}

/**
 * socket.io middleware: refuses the handshake with a readable reason, logs the unexpected. A
 * refusal of access (signed out, not a member, too low a role) carries `data.access`, so the page
 * says its access ended; any other (the store does not answer: "internal") is worth retrying,
 * and the page reconnects (app/components/use-live-box.ts).
 */
export function requireSession(need: Role, then?: (socket: Socket, actor: SessionActor) => Promise<void>) {
  return async (socket: Socket, next: (err?: Error) => void) => {
    try {
      // Seen again at connection (server/revocation.ts): a change during this check is not missed.
      socket.data.accessSeq = principalSeq();
      const actor = await sessionActor(socket, need);
      socket.data.actor = actor;
      if (then) await then(socket, actor);
      next();
    } catch (err) {
      if (isApiError(err)) {
        const refused = new Error(err.message) as Error & { data?: unknown };
        if (err.code === "unauthorized" || err.code === "denied") refused.data = { access: true };
        return next(refused);
      }
      log.error({ err }, "socket handshake failed");
      next(new Error("internal"));
    }
  };
}
