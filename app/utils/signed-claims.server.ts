import { createHmac, timingSafeEqual } from "node:crypto";
import { ApiError } from "./api-error.server";
import { derive } from "./secret.server";

// Path and query credentials the server signs and keeps no record of (viewer tickets, CDP
// tokens): `base64url(payload JSON) "." base64url(HMAC-SHA256(payload part))`, each kind keyed
// with its own derive() key, so one kind is never accepted as another. Opening one compares the
// MAC in constant time before anything in the payload is trusted; what the payload must hold is
// the caller's to check.

const SHAPE = /^[A-Za-z0-9_-]{16,1024}\.[A-Za-z0-9_-]{43}$/;

const mac = (key: string, part: string) => createHmac("sha256", derive(key)).update(part).digest();

/** Signs a payload with the derive() key named `key`. */
export function signClaims(key: string, payload: object): string {
  const part = Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
  return `${part}.${mac(key, part).toString("base64url")}`;
}

/**
 * The payload of a token signed with `key`, parsed but not yet checked. Throws `unauthorized`:
 * `missing` when it is absent or not shaped like one, and when it is forged or unreadable
 * (`noun` names it in the message: "ticket", "CDP token").
 */
export function openClaims(key: string, token: unknown, noun: string, missing: string): unknown {
  if (typeof token !== "string" || !SHAPE.test(token)) throw new ApiError("unauthorized", missing);
  const dot = token.indexOf(".");
  const part = token.slice(0, dot);
  // The MAC as text, not decoded: base64url decoding ignores a last character's spare bits, so
  // another spelling of the same MAC would pass (a ticket that is not byte for byte the one issued).
  const given = Buffer.from(token.slice(dot + 1), "latin1");
  const expected = Buffer.from(mac(key, part).toString("base64url"), "latin1");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new ApiError("unauthorized", `the ${noun} was not issued by this server`);
  try {
    return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    throw new ApiError("unauthorized", `the ${noun} cannot be read`);
  }
}
