import { EventEmitter } from "node:events";
import { onClusterMessage, publish } from "~/utils/cluster.server";

// Access that ends or shrinks, as it happens: a key revoked, a member removed or given another
// role, sessions ended (log-out, password change). The socket modules (server/) listen and check
// their open connections again, so no socket outlives the access that opened it. A leaf: the
// models that change access fire it, and it imports none of them.

export type PrincipalChange =
  /** A key was revoked. */
  | { kind: "key"; keyId: string }
  /** A member was removed from a workspace or given another role. */
  | { kind: "member"; workspaceId: string; userId: string }
  /** Sessions ended: these ones, or (with userId alone) every session of that person. */
  | { kind: "sessions"; sessionIds?: string[]; userId?: string };

const emitter = new EventEmitter();
emitter.setMaxListeners(0);
let seq = 0;

/** Tells this server's listeners at once; the promise ends when the other servers have been told (or could not be). */
export function principalChanged(change: PrincipalChange): Promise<void> {
  seq++;
  emitter.emit("change", change);
  // The other servers check their own sockets and drop cached keys (ADR 0021).
  return publish("principal", change);
}

onClusterMessage("principal", (change) => {
  seq++;
  emitter.emit("change", change as PrincipalChange);
});

/**
 * Increases with every change. A socket that checked access across an await compares it before
 * it registers: a change in between (which its listener could not see yet) means check again.
 */
export function principalSeq(): number {
  return seq;
}

/** Listens to every change; returns the function that stops listening. */
export function onPrincipalChange(listener: (change: PrincipalChange) => void): () => void {
  emitter.on("change", listener);
  return () => emitter.off("change", listener);
}

/**
 * Whether a change may concern a connection opened by `issuer` (`server`, `user:<id>`,
 * `key:<id>`) through `sessionId`. It only picks what to check again; the check decides.
 */
export function concerns(change: PrincipalChange, issuer: string, sessionId?: string): boolean {
  switch (change.kind) {
    case "key":
      return issuer === `key:${change.keyId}`;
    case "member":
      return issuer === `user:${change.userId}`;
    case "sessions":
      return (
        (!!sessionId && !!change.sessionIds?.includes(sessionId)) ||
        (!change.sessionIds && !!change.userId && issuer === `user:${change.userId}`)
      );
  }
}
