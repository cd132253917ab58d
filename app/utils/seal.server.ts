import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { derive } from "./secret.server";

// Values kept encrypted at rest (a workspace's secrets, saved browser states): AES-256-GCM with
// a key derived from the server key for one purpose, so the store file alone (a backup, a copied
// disk) reveals nothing, and a key for one purpose opens nothing of another. The additional data
// binds a sealed value to where it is kept (owner and name): a row copied onto another row does
// not open there.

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const keys = new Map<string, Buffer>();

function keyFor(purpose: string): Buffer {
  let k = keys.get(purpose);
  if (!k) keys.set(purpose, (k = Buffer.from(derive(`seal:${purpose}`), "base64url")));
  return k;
}

/** Encrypts `plain` for `purpose`, bound to `context`; the answer is text (`v1.` + base64url). */
export function seal(purpose: string, plain: string | Buffer, context: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyFor(purpose), iv);
  cipher.setAAD(Buffer.from(context, "utf8"));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")}`;
}

/**
 * Decrypts what `seal` made with the same purpose and context. A value that does not open
 * (another server key, a row moved, bytes changed) throws an Error that names none of it.
 */
export function unseal(purpose: string, sealed: string, context: string): Buffer {
  const dot = sealed.indexOf(".");
  if (dot < 0 || sealed.slice(0, dot) !== VERSION) throw new Error(`a sealed ${purpose} value has an unknown format`);
  const raw = Buffer.from(sealed.slice(dot + 1), "base64url");
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error(`a sealed ${purpose} value is cut short`);
  const decipher = createDecipheriv("aes-256-gcm", keyFor(purpose), raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, "utf8"));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new Error(`a sealed ${purpose} value does not open with this server's key (was HOLM_SECRET_KEY or secret.key changed?)`);
  }
}
