// Per-request authentication of the server's calls (images/README.md, "Signed requests").
// A static bearer could be replayed by anyone who read one request off the wire; here each
// request carries an HMAC, keyed with the box's secret, over its method, path and query, a
// timestamp, a nonce and the SHA-256 of its body. A request is taken once, within MAX_SKEW_MS
// of its timestamp, and never one signed before this agent started.
import crypto from "node:crypto";

export const SCHEME = "Holm-HMAC-SHA256";
/** How far a request's timestamp may be from the agent's clock (the box shares the host's). */
export const MAX_SKEW_MS = 30_000;
/** Slack for "signed before this agent started": the server and the box read one clock. */
const START_SLACK_MS = 1_000;
export const EMPTY_BODY_SHA256 = crypto.createHash("sha256").digest("hex");

const HEADER_RE = /^Holm-HMAC-SHA256 t=(\d{13}),n=([A-Za-z0-9_-]{16,64}),b=([0-9a-f]{64}),s=([A-Za-z0-9_-]{43})$/;

/** The bytes the signature covers, one field per line. */
export function canonical(method: string, target: string, t: string, nonce: string, bodySha256: string): string {
  return `holm-agent-v1\n${method.toUpperCase()}\n${target}\n${t}\n${nonce}\n${bodySha256}`;
}

/** The Authorization value for one request (what the server sends; tests use it too). */
export function sign(secret: string, method: string, target: string, body?: Uint8Array | string, now = Date.now()): string {
  const b = body === undefined || body.length === 0 ? EMPTY_BODY_SHA256 : crypto.createHash("sha256").update(body).digest("hex");
  const t = String(now);
  const n = crypto.randomBytes(16).toString("base64url");
  const s = crypto.createHmac("sha256", secret).update(canonical(method, target, t, n, b)).digest("base64url");
  return `${SCHEME} t=${t},n=${n},b=${b},s=${s}`;
}

export type Verdict = { ok: true; bodySha256: string } | { ok: false; why: string };

export class Verifier {
  /** nonce → the time after which its request is stale anyway (insertion order ≈ time order). */
  private readonly seen = new Map<string, number>();

  private readonly secret: () => string;

  constructor(
    secret: string | (() => string),
    private readonly startedAt = Date.now(),
    private readonly now: () => number = Date.now,
  ) {
    this.secret = typeof secret === "string" ? () => secret : secret;
  }

  /**
   * Checks the head of a request. The body's hash is only claimed here: the caller hashes the
   * body it reads and compares (`bodyMatches`) before acting on it.
   */
  check(method: string, target: string, header: string | undefined): Verdict {
    const secret = this.secret();
    if (!secret) return { ok: false, why: "this agent has no secret yet" };
    const m = HEADER_RE.exec(header ?? "");
    if (!m) return { ok: false, why: `missing or malformed ${SCHEME} authorization` };
    const [, t, n, b, s] = m as unknown as [string, string, string, string, string];
    const at = Number(t);
    const now = this.now();
    // Checked before the HMAC (cheap), but the answer says no more than "refused".
    if (Math.abs(now - at) > MAX_SKEW_MS || at < this.startedAt - START_SLACK_MS) return { ok: false, why: "stale or future timestamp" };
    const want = crypto.createHmac("sha256", secret).update(canonical(method, target, t, n, b)).digest();
    const got = Buffer.from(s, "base64url");
    if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return { ok: false, why: "bad signature" };
    // Only a request the server signed gets this far, so only the server can fill the cache.
    this.forgetStale(now);
    if (this.seen.has(n)) return { ok: false, why: "replayed request" };
    this.seen.set(n, at + MAX_SKEW_MS);
    return { ok: true, bodySha256: b };
  }

  private forgetStale(now: number): void {
    for (const [nonce, until] of this.seen) {
      if (until >= now) break;
      this.seen.delete(nonce);
    }
  }
}

/** Constant-time comparison of a body's hash (hex) with the one the signature covered. */
export function bodyMatches(actualHex: string, signedHex: string): boolean {
  const a = Buffer.from(actualHex, "hex");
  const b = Buffer.from(signedHex, "hex");
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}
