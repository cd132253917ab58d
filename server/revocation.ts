import type { Server as IoServer, Socket } from "socket.io";
import { type Access, principalAccess } from "~/models/access.server";
import { recheckDirectViewers } from "~/models/direct-viewer-access.server";
import { concerns, onPrincipalChange, principalSeq } from "~/models/principal-changes.server";
import type { Role } from "~/models/roles";
import { roleIn } from "~/models/workspace.server";
import { type ViewerConnection, openViewers } from "~/models/viewer.server";
import { VIEWER_CLOSE } from "~/protocol/viewer-socket";
import type { SessionActor } from "./socket-auth";
import { log } from "~/utils/log.server";

// Revocation is live: when a key is revoked, a member removed or given another role, or sessions
// end (log-out, password change), every open socket that principal opened is checked against the
// store again, and closed when its access is gone: viewer sockets (by the ticket's issuer and
// session), the terminal and the box list (by the session cookie they opened with). The check is
// a query or two, so a socket closes well within a second of the change.

/** What each socket.io namespace needs, as its handshake checked it. */
const NEEDS: Record<string, Role> = { "/boxes": "viewer", "/terminal": "member" };

// A check that fails (the store does not answer) closes: access that cannot be confirmed is not
// assumed. The console reconnects, and is checked afresh.
const unconfirmed = "your access could not be confirmed; reconnect";

async function recheckViewer(c: ViewerConnection) {
  const access = await principalAccess(c.issuer, c.owner ?? null, c.mode === "control" ? "member" : "viewer", c.sessionId).catch(
    (err) => {
      log.error({ err }, "checking a viewer's access failed");
      return { ok: false, lost: "ended", why: unconfirmed } as const;
    },
  );
  if (access.ok) return;
  // 4401: the principal is gone; 4403: it may still watch, but not drive (the console
  // reconnects to watch).
  c.close(access.lost === "role" ? VIEWER_CLOSE.denied : VIEWER_CLOSE.badTicket, access.why);
}

/** Exported for its test (tests/unit/socket-revocation.test.ts). */
export async function recheckSocket(socket: Socket, need: Role) {
  const actor = socket.data.actor as SessionActor | undefined;
  if (!actor || !socket.connected) return;
  let confirmed = true;
  const access = await principalAccess(`user:${actor.userId}`, actor.workspaceId, need, actor.sessionId).catch((err) => {
    log.error({ err }, "checking a socket's access failed");
    confirmed = false;
    return { ok: false, lost: "ended", why: unconfirmed } as const;
  });
  // A check that failed tells the box page nothing: it reconnects, and its handshake checks again.
  if (socket.nsp.name === "/boxes" && confirmed) await tellBoxPage(socket, actor, access);
  if (access.ok || !socket.connected) return;
  // The terminal's page shows why its session ended; then the connection goes.
  if (socket.nsp.name === "/terminal") socket.emit("exit", { code: null, why: access.why });
  socket.disconnect(true);
}

/**
 * What a box page is told (`access`) when its person's access changed: their new role (the socket
 * stays: a viewer still watches; the page draws itself again for that role), or that they are no
 * longer a member, or why their access ended, before the socket closes. Without it the page kept
 * its old buttons, or said "connecting…" for good, since socket.io does not reconnect a socket
 * the server closed (app/components/use-live-box.ts).
 */
async function tellBoxPage(socket: Socket, actor: SessionActor, access: Access) {
  // A lookup that fails is no answer, not "not a member": the store being down removes no one.
  const role = await roleIn(actor.workspaceId, actor.userId).catch(() => null);
  if (!socket.connected) return;
  if (role === null) {
    if (!access.ok) socket.emit("access", { kind: "ended", why: access.why });
    return;
  }
  if (access.ok) {
    if (!role || role === actor.role) return;
    actor.role = role;
    socket.emit("access", { kind: "role", role });
  } else if (!role) socket.emit("access", { kind: "removed" });
  else socket.emit("access", { kind: "ended", why: access.why });
}

export function attachRevocation(io: IoServer) {
  // A socket whose handshake check overlapped an access change is checked once more when it joins
  // (the listener below did not see it yet). Viewer sockets do the same in viewer-socket.ts.
  for (const [name, need] of Object.entries(NEEDS)) {
    io.of(name).on("connection", (socket) => {
      if (socket.data.accessSeq !== principalSeq()) void recheckSocket(socket, need);
    });
  }
  onPrincipalChange((change) => {
    const checks: Promise<void>[] = [];
    for (const c of openViewers()) {
      if (concerns(change, c.issuer, c.sessionId)) checks.push(recheckViewer(c));
    }
    for (const [name, need] of Object.entries(NEEDS)) {
      for (const socket of io.of(name).sockets.values()) {
        const actor = socket.data.actor as SessionActor | undefined;
        if (actor && concerns(change, `user:${actor.userId}`, actor.sessionId)) checks.push(recheckSocket(socket, need));
      }
    }
    void Promise.all(checks);
    // Sockets a box serves itself (policy.auth token) are checked through their box.
    void recheckDirectViewers(change).catch((err) => log.error({ err }, "rechecking direct viewer sockets failed"));
  });
}
