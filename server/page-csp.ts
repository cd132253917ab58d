import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";

// The console's script policy (docs/decisions/0033). Every answer that is not /v1 or /mcp may be
// a page of the console, so each gets a nonce of its own (128 random bits, never reused) and a
// policy that runs only scripts carrying it: the server's render puts it on every script it
// writes (app/entry.server.tsx: React's, React Router's, the network-cut guard), and
// 'strict-dynamic' lets those load the route modules they import. Markup that reached a page any
// other way (an escaping bug around a box name, a trace entry, a title from a box) runs nothing:
// no inline handler, no parser-met <script>, no javascript: URL. No 'unsafe-inline' and no
// 'unsafe-eval': nothing we ship (React Router, noVNC, xterm, socket.io) needs either.

const nonces = new WeakMap<IncomingMessage, string>();

/**
 * - script-src: the nonce and what nonced scripts load; nothing else.
 * - object-src 'none': no plugin content; base-uri 'none': an injected <base> cannot move the
 *   page's relative script and form addresses to another host.
 * - form-action 'self': an injected <form> cannot post a typed password elsewhere.
 * - frame-ancestors 'none': never framed (ADR 0005, as before).
 * - connect-src 'self': fetch, socket.io and the viewer's WebSocket (same host: 'self' covers
 *   ws: and wss: there) reach this server only.
 * - img-src: this server's pictures (thumbnails), data: and blob: ones the console makes.
 * Styles are not restricted: React writes style attributes, and a style runs no script.
 */
export function pagePolicy(nonce: string): string {
  return [
    `script-src 'nonce-${nonce}' 'strict-dynamic'`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "connect-src 'self'",
    "img-src 'self' data: blob:",
  ].join("; ");
}

/** A fresh nonce for this request's page, kept for React Router's render (`cspNonceOf`). */
export function newPageNonce(req: IncomingMessage): string {
  const nonce = randomBytes(16).toString("base64");
  nonces.set(req, nonce);
  return nonce;
}

/** The nonce the request's answer carries in its policy (server.ts hands it to the render). */
export function cspNonceOf(req: IncomingMessage): string | undefined {
  return nonces.get(req);
}
