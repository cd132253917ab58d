import { createHmac } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { PinnedTarget } from "~/utils/webhook-target.server";

// One delivery attempt over HTTP (docs/decisions/0018). The request goes to the address the
// target check resolved (a `lookup` that answers only that address), so the name is never
// resolved a second time between check and connect; the Host header and the TLS server name
// stay the URL's host, so virtual hosts and certificates work as usual. Redirects are not
// followed (a 3xx is a failed attempt): a redirect could point anywhere, past the check.

/**
 * The signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, with one
 * `v1=` per secret that signs now (two during a rotation's window, the new secret's first, as
 * Stripe does): a receiver accepts the delivery when any `v1` matches its secret.
 */
export const SIGNATURE_HEADER = "holm-signature";

/** The header value for `body` signed with each of `secrets` at `t` (unix seconds). */
export function signature(secrets: string | readonly string[], t: number, body: string): string {
  const macs = (typeof secrets === "string" ? [secrets] : secrets).map((s) => `v1=${createHmac("sha256", s).update(`${t}.${body}`, "utf8").digest("hex")}`);
  return `t=${t},${macs.join(",")}`;
}

export interface AttemptResult {
  /** The receiver's status code, when it answered. */
  status?: number;
  latencyMs: number;
  ok: boolean;
  /** Why the attempt failed, for the delivery log (never the secret or a header value). */
  error?: string;
}

/** The most of a receiver's answer read (and thrown away): a receiver cannot make us buffer. */
const ANSWER_MAX = 64 * 1024;
/** How long the rest of an answer is read after its status, before the connection is closed. */
const ANSWER_GRACE_MS = 1000;

export function sendAttempt(
  target: PinnedTarget,
  body: string,
  headers: Record<string, string>,
  secrets: readonly string[],
  timeoutMs: number,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const pinned: LookupFunction = (_host, opts, cb) => {
    // Node asks for every address when it may try several (autoSelectFamily); either way, one.
    if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
    else cb(null, target.address, target.family);
  };
  const t = Math.floor(Date.now() / 1000);
  const lib = target.url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Omit<AttemptResult, "latencyMs">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...r, latencyMs: elapsed() });
    };
    const req = lib.request(
      target.url,
      {
        method: "POST",
        lookup: pinned,
        agent: false,
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "user-agent": "holm-webhooks/1",
          [SIGNATURE_HEADER]: signature(secrets, t, body),
        },
      },
      (res) => {
        // The status decides: a 2xx is delivered the moment it arrives, whatever the body does
        // after (a receiver that answers 200 and never ends its body has still accepted).
        const status = res.statusCode ?? 0;
        finish(status >= 200 && status < 300 ? { status, ok: true } : { status, ok: false, error: `the receiver answered ${status}` });
        // Read (and throw away) what follows for a moment, so a receiver that ends promptly sees
        // its answer taken; then close: a receiver cannot keep our connection or make us buffer.
        let read = 0;
        const stop = setTimeout(() => res.destroy(), ANSWER_GRACE_MS);
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > ANSWER_MAX) res.destroy();
        });
        res.on("close", () => clearTimeout(stop));
        res.on("error", () => {});
      },
    );
    const timer = setTimeout(() => {
      finish({ ok: false, error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on("error", (e) => finish({ ok: false, error: `could not send: ${(e as NodeJS.ErrnoException).code ?? e.message}` }));
    req.end(body);
  });
}
