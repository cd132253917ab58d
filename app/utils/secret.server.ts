import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { env } from "./env.server";
import { assertRestoreFinished } from "./restore-marker.server";

let key: Buffer | undefined;

/**
 * The server's secret. Kept in the state directory (0600) unless HOLM_SECRET_KEY is set, so a
 * restarted server can still reach the boxes an earlier one launched: per-box agent secrets are
 * derived from it rather than stored.
 */
export function serverKey(): Buffer {
  if (key) return key;
  const e = env();
  if (e.HOLM_SECRET_KEY) {
    key = Buffer.from(e.HOLM_SECRET_KEY, "utf8");
    return key;
  }
  const file = path.join(e.HOLM_STATE_DIR, "secret.key");
  try {
    key = Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64url");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    // Not a new key in place of one a cut-off restore moved aside: it would open no sealed secret.
    assertRestoreFinished(e.HOLM_STATE_DIR);
    fs.mkdirSync(e.HOLM_STATE_DIR, { recursive: true, mode: 0o700 });
    const fresh = randomBytes(32);
    try {
      fs.writeFileSync(file, fresh.toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
      key = fresh;
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== "EEXIST") throw raced;
      key = Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64url");
    }
  }
  return key;
}

/**
 * The server's own identity when its state directory names one (`server-id`, written by `holm
 * restore --as-new-server`): a copy of a store keeps the original's key, so its secrets open, but
 * must not be the same server to the engine as the original still running beside it. Without the
 * file, undefined: the identity is derived from the key (box-record.server.ts serverId).
 */
export function statedServerId(): string | undefined {
  const file = path.join(env().HOLM_STATE_DIR, "server-id");
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8").trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  // Refused, not ignored: falling back to the key's identity would take the original's boxes.
  if (!/^[A-Za-z0-9_-]{8,64}$/.test(text)) throw new Error(`${file} is not a server id (8 to 64 letters, digits, - or _): remove it only if this server is the one its key launched boxes for`);
  return text;
}

/** A key for one purpose, so a secret leaked from one use says nothing about another. */
export function derive(purpose: string): string {
  return createHmac("sha256", serverKey()).update(purpose).digest("base64url");
}

/** Compares two secrets in constant time whatever their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}
