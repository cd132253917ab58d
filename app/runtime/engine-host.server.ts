import { X509Certificate, createPrivateKey } from "node:crypto";
import { isIP } from "node:net";
import { badRequest } from "~/utils/api-error.server";

// An engine's address (`fields.host`) and its TLS client pair, checked whole before a runtime is
// stored (Review I, items 4 and 7). The shape regex in the providers lets through what the
// clients later choke on (`:99999`, `[:::::]`: "Invalid URL", a 500 after the row was written) or
// what no engine can be (`..`, `-`, port 0), so an address is taken apart here and each part
// checked the way the client that dials it will read it.

// One DNS label: letters, digits and inner hyphens (RFC 1123), at most 63 characters.
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const USER = /^[A-Za-z0-9._-]{1,64}$/;
const PARTS = /^(tcp|ssh):\/\/(?:([^@/]*)@)?(\[[^\]/]*\]|[^:@/[\]]*)(?::([0-9]*))?\/?$/;

const HELP = { tcp: "tcp://HOST:PORT", ssh: "ssh://[USER@]HOST[:PORT]" } as const;

/**
 * `host` with no trailing slash, or a 400 naming fields.host and saying what is wrong. `schemes`
 * are those the provider takes; a user part is for ssh:// only (TLS names no user: one given
 * would be silently ignored).
 */
export function checkEngineHost(host: string, schemes: readonly ("tcp" | "ssh")[]): string {
  const help = schemes.map((s) => HELP[s]).join(" or ");
  const bad = (why: string) => badRequest(`fields.host: ${why}; expected ${help}`);
  const m = PARTS.exec(host);
  if (!m || !schemes.includes(m[1] as "tcp" | "ssh")) throw bad("not an engine address");
  const [, scheme, user, name, port] = m as unknown as [string, "tcp" | "ssh", string | undefined, string, string | undefined];
  if (user !== undefined) {
    if (scheme === "tcp") throw bad("a tcp:// engine takes no user (TLS client certificates say who connects)");
    if (!USER.test(user)) throw bad(`the user is 1 to 64 letters, digits, ".", "_" or "-"`);
  }
  if (name.startsWith("[")) {
    if (isIP(name.slice(1, -1)) !== 6) throw bad(`${name} is not an IPv6 address`);
  } else if (!isIP(name)) {
    const labels = name.split(".");
    // All digits and dots but not an IPv4 address (999.1.1.1): a client would not read it as a name either.
    if (name.length > 253 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels.at(-1)!)) {
      throw bad(`"${name.slice(0, 64)}" is not a host name, an IPv4 address or a bracketed IPv6 address`);
    }
  }
  if (port !== undefined) {
    const n = Number(port);
    if (!/^[0-9]{1,5}$/.test(port) || n < 1 || n > 65535) throw bad(`port ${port.slice(0, 8)} is not 1 to 65535`);
  }
  // What the clients do with it (remoteClient, sshTarget): it must parse there too.
  try {
    new URL(host.replace(/^tcp:/, "https:"));
  } catch {
    throw bad("not an engine address");
  }
  return host.replace(/\/$/, "");
}

function checkPem(name: string, value: string, kind: "cert" | "key"): void {
  // The message names the secret, never its value: it may be a private key.
  try {
    if (kind === "cert") new X509Certificate(value);
    else createPrivateKey(value);
  } catch {
    throw badRequest(`secrets.${name}: not a PEM ${kind === "cert" ? "certificate" : "private key"}`);
  }
}

/**
 * Checks `ca`, `cert` and `key` are PEMs and that `key` is the private key of `cert`: otherwise
 * every TLS handshake would fail later, far from the request that stored them.
 */
export function checkTlsPair(secrets: { ca: string; cert: string; key: string }): void {
  checkPem("ca", secrets.ca, "cert");
  checkPem("cert", secrets.cert, "cert");
  checkPem("key", secrets.key, "key");
  if (!new X509Certificate(secrets.cert).checkPrivateKey(createPrivateKey(secrets.key))) {
    throw badRequest("secrets.key: not the private key of secrets.cert (the pair must match)");
  }
}
