import { DEFAULT_RUNTIME, localDocker, runtime } from "~/runtime/index.server";
import { DIRECT_TICKET_TTL_MS, directViewerPassword, directViewerPath, signDirectTicket } from "~/protocol/direct-viewer";
import { viewerSocketUrl } from "~/protocol/viewer-socket";
import { unsupported } from "~/utils/api-error.server";
import { db } from "~/utils/db.server";
import { publicUrl } from "~/utils/env.server";
import { agentSecret } from "./agent.server";
import { notePasswordHolder, passwordEpoch } from "./direct-password.server";
import { noteDirectTicket } from "./direct-ticket-holders.server";
import { keyById } from "./key.server";
import type { BoxJson } from "./box-record.server";
import type { NormalSpec } from "./spec.server";
import type { IssuedTicket } from "./ticket.server";

// The server's half of direct viewer sockets (spec.policy.auth token or password, seed 000; the
// box's half is images/x11/agent/viewer.ts, the shared wire app/protocol/direct-viewer.ts): which
// runtimes can publish them, and the URLs a ticket answer carries. The box checks what it is
// given; the server only signs and points.

/** Direct viewer sockets are published on the built-in engine's host only: its address is the one viewers can be told. */
export function checkDirectViewerRuntime(spec: NormalSpec, runtimeName: string): void {
  if (spec.policy.auth === "none") return;
  if (runtimeName !== DEFAULT_RUNTIME || !localDocker()?.directViewerPort) {
    throw unsupported(
      `spec.policy.auth ${spec.policy.auth}: direct viewer sockets are published on the built-in "${DEFAULT_RUNTIME}" runtime's host only, not on "${runtimeName}"`,
    );
  }
}

export interface DirectSockets {
  view_socket: string;
  control_socket?: string;
  /** policy.auth `password`: the box's viewer password (watching only). */
  password?: string;
}

/**
 * The ticket answer's sockets for a box with direct viewer sockets, or undefined (auth `none`, or
 * not running so nothing is published). `token`: both go to the box, each with a ticket the box
 * checks. `password`: watching goes to the box (VNC authentication with `password`); control goes
 * through the server, since a password names no person and cannot honour a takeover.
 */
export async function directSockets(box: BoxJson, screen: number, issued: IssuedTicket, issuer: string): Promise<DirectSockets | undefined> {
  const { auth, bind, advertise } = box.spec.policy;
  if (auth === "none") return undefined;
  const row = await db().selectFrom("box").select(["runtime_ref"]).where("id", "=", box.id).executeTakeFirst();
  const port = row?.runtime_ref ? await runtime(box.runtime)?.directViewerPort?.(row.runtime_ref).catch(() => undefined) : undefined;
  if (!port) return undefined;
  // Published on loopback, only this machine reaches it (unless an administrator forwards a name).
  const host = advertise ?? (bind === "loopback" ? "127.0.0.1" : new URL(publicUrl()).hostname);
  const base = `ws://${host.includes(":") ? `[${host}]` : host}:${port}${directViewerPath(screen)}`;
  if (auth === "password") {
    // Noted before it is given: a holder who loses access changes it (direct-password.server.ts).
    await notePasswordHolder(box.id, issuer);
    return {
      view_socket: base,
      ...(issued.mode === "control" && { control_socket: viewerSocketUrl(publicUrl(), box.id, screen, { ticket: issued.ticket, mode: "control" }) }),
      password: directViewerPassword(agentSecret(box.id), await passwordEpoch(box.id)),
    };
  }
  // No later than the issuer's key expires: the box hears of no expiry (the relay closes its
  // sockets then), and closes a socket when its ticket expires.
  const keyEnds = issuer.startsWith("key:") ? (await keyById(issuer.slice(4)))?.expires_at_ms : undefined;
  const expires_at_ms = Math.min(issued.expires_at_ms, Date.now() + DIRECT_TICKET_TTL_MS, keyEnds ?? Infinity);
  await noteDirectTicket(box.id, issuer, expires_at_ms);
  const direct = (mode: "view" | "control") => {
    const ticket = signDirectTicket(agentSecret(box.id), { box: box.id, screen, mode: issued.mode, issuer, expires_at_ms, issued_at_ms: Date.now() });
    return `${base}?${new URLSearchParams({ ticket, mode })}`;
  };
  return { view_socket: direct("view"), ...(issued.mode === "control" && { control_socket: direct("control") }) };
}
