import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { vncPasswordFrom } from "./rfb/vnc-auth";

// Direct viewer sockets (spec.policy.auth `token` or `password`, seed 000): a WebSocket served by
// the box's agent on DIRECT_VIEWER_PORT, published on the host (policy.bind), that pipes one
// viewer to one screen's x11vnc through the same RFB filter as the server's relay
// (app/protocol/rfb/pipe.ts). What the server and the box must agree on lives here: the ticket
// the server signs and the box checks, the password both derive, and who may drive while a
// person holds the screen. Keys are the box's agent secret (per box, derived from the server
// key), each use under its own label, so a direct ticket is never an agent request or a ticket
// of the server's own viewer socket. Node only.

/** Where the agent serves direct viewer sockets inside the box (published on the host when the spec asks). */
export const DIRECT_VIEWER_PORT = 5810;
export const DIRECT_TICKET_TTL_MS = 15 * 60_000;

export type ViewerAuth = "none" | "password" | "token";

/** The path of screen n's direct viewer socket. */
export const directViewerPath = (screen: number): string => `/screens/${screen}/viewer`;

/** A takeover as the box needs to know it: who holds the screen, and whether alone. */
export interface HeldBy {
  by: string;
  exclusive: boolean;
}

/**
 * Whether `issuer` (`user:…`, `key:…`, `server`) may drive a screen `held` (or not held): a
 * person's exclusive takeover is that person's alone; one an agent asked for through /v1 hands
 * the screen to people (any person drives, no key or server token does).
 */
export function mayDriveHeld(held: HeldBy | undefined | null, issuer: string): boolean {
  if (!held?.exclusive) return true;
  if (held.by.startsWith("user:")) return issuer === held.by;
  return issuer.startsWith("user:");
}

/** Input that came in on a direct control socket, as coarse as the relay reports it (never which keys). */
export interface DirectInput {
  screen: number;
  issuer: string;
  kind: "pointer" | "key" | "cut";
  detail: Record<string, number>;
  at_ms: number;
}

/** `POST /viewers/inputs`: the input since the last call (the call takes it), and how much was dropped for room. */
export interface DirectInputs {
  inputs: DirectInput[];
  dropped: number;
  /** The sockets open now (so the server's counts follow without another call). */
  viewers?: { screen: number; mode: "view" | "control"; issuer: string }[];
}

export interface DirectTicketClaims {
  box: string;
  screen: number;
  /** The highest mode it opens: `control` also opens `view`. */
  mode: "view" | "control";
  issuer: string;
  expires_at_ms: number;
  /** When the server signed it: a box refuses tickets of an issuer signed before it lost access. */
  issued_at_ms: number;
}

const TICKET_LABEL = "holm-direct-viewer-v1\n";
const SHAPE = /^[A-Za-z0-9_-]{16,1024}\.[A-Za-z0-9_-]{43}$/;

const mac = (secret: string, part: string) => createHmac("sha256", secret).update(TICKET_LABEL + part).digest();

/** Signs a direct ticket with the box's agent secret. */
export function signDirectTicket(secret: string, claims: DirectTicketClaims): string {
  const payload = { ...claims, nonce: randomBytes(12).toString("base64url") };
  const part = Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
  return `${part}.${mac(secret, part).toString("base64url")}`;
}

/**
 * The claims of a ticket this box's server signed, or why not (the MAC is compared in constant
 * time before anything in the payload is trusted).
 */
export function openDirectTicket(secret: string, token: string | null, boxId: string, now = Date.now()): DirectTicketClaims | string {
  if (!secret) return "the box has no secret yet";
  if (!token || !SHAPE.test(token)) return "the ticket is missing or is not a viewer ticket";
  const dot = token.indexOf(".");
  const part = token.slice(0, dot);
  // As text: base64url decoding ignores a last character's spare bits (signed-claims.server.ts).
  const given = Buffer.from(token.slice(dot + 1), "latin1");
  const expected = Buffer.from(mac(secret, part).toString("base64url"), "latin1");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "the ticket was not issued for this box";
  let p: Partial<DirectTicketClaims>;
  try {
    p = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Partial<DirectTicketClaims>;
  } catch {
    return "the ticket cannot be read";
  }
  if (
    typeof p.box !== "string" ||
    !Number.isInteger(p.screen) ||
    (p.mode !== "view" && p.mode !== "control") ||
    typeof p.issuer !== "string" ||
    !Number.isFinite(p.expires_at_ms) ||
    !Number.isFinite(p.issued_at_ms)
  ) {
    return "the ticket cannot be read";
  }
  if (p.box !== boxId) return "the ticket is for another box";
  if (now >= p.expires_at_ms!) return "the ticket has expired; ask the server for a new one";
  if (p.expires_at_ms! - now > DIRECT_TICKET_TTL_MS + 60_000) return "the ticket's lifetime is longer than a ticket's";
  return { box: p.box, screen: p.screen!, mode: p.mode, issuer: p.issuer, expires_at_ms: p.expires_at_ms!, issued_at_ms: p.issued_at_ms! };
}

/**
 * The box's viewer password (policy.auth `password`): 8 printable characters, from its agent
 * secret and `epoch`, which the server raises when someone given the password loses access (the
 * box is told: `POST /viewers/password`). Epoch 0 is the password of boxes from before epochs.
 */
export function directViewerPassword(secret: string, epoch = 0): string {
  const label = epoch === 0 ? "holm-direct-viewer-password-v1" : `holm-direct-viewer-password-v1\n${epoch}`;
  return vncPasswordFrom(createHmac("sha256", secret).update(label).digest());
}
