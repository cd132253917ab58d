import { Resolver } from "node:dns/promises";
import { readFile } from "node:fs/promises";
import ipaddr from "ipaddr.js";
import { badRequest } from "./api-error.server";
import { log } from "./log.server";

// Where a webhook may send (docs/decisions/0018). A webhook URL is chosen by a workspace, and
// the server sends to it from inside the operator's network: without a guard, a URL could make
// the server call its own loopback services, a cloud metadata endpoint (169.254.169.254) or
// anything on a private range (SSRF). So only public unicast addresses are targets, unless the
// administrator allows private ones (HOLM_WEBHOOK_ALLOW_PRIVATE=1). The check is made on the
// addresses a name resolves to, and the sender connects to the very address checked (pinned),
// so a name that resolves once public and then private (DNS rebinding) gets nowhere.

/** The longest URL a webhook may have. */
export const WEBHOOK_URL_MAX = 2048;

/**
 * Addresses outside every range ipaddr.js names are "unicast": the only ones allowed. The named
 * ranges are loopback, private (10/8, 172.16/12, 192.168/16), link-local (169.254/16, fe80::/10),
 * unique-local (fc00::/7), carrier-grade NAT, unspecified, broadcast, multicast, reserved, and the
 * IPv6 forms that carry an IPv4 address (mapped, 6to4, Teredo, NAT64), whose IPv4 part could be
 * any of those. Named here too: ranges ipaddr.js calls unicast that are not public.
 */
const ALSO_BLOCKED = [
  // Alibaba Cloud's metadata address sits in public space.
  ["100.100.100.200/32", "cloud metadata"],
  ["198.18.0.0/15", "benchmarking"],
  // IPv4-compatible (::a.b.c.d, deprecated): ::7f00:1 carries 127.0.0.1.
  ["::/96", "IPv4-compatible"],
  ["fec0::/10", "site-local"],
  ["100::/64", "discard"],
  // Local-use NAT64 (RFC 8215), which carries an IPv4 address as 64:ff9b::/96 does.
  ["64:ff9b:1::/48", "local NAT64"],
  // IANA's special-purpose IPv6 ranges that are not globally reachable and that ipaddr.js calls
  // unicast: benchmarking (RFC 5180), ORCHID (RFC 4843), documentation (RFC 9637) and SRv6
  // segment identifiers (RFC 9602), which an operator's own routers may carry.
  ["2001:2::/48", "benchmarking"],
  ["2001:10::/28", "ORCHID"],
  ["3fff::/20", "documentation"],
  ["5f00::/16", "SRv6 segment identifiers"],
].map(([cidr, name]) => [ipaddr.parseCIDR(cidr!), name!] as const);

/** Why `address` (an IP literal) may not be a target, or undefined when it may. */
export function blockedRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "not an IP address";
  let ip = ipaddr.parse(address);
  // ::ffff:10.0.0.1 is 10.0.0.1: judge the IPv4 address it carries.
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  if (range !== "unicast") return range;
  for (const [[net, bits], name] of ALSO_BLOCKED) {
    if (ip.kind() === net.kind() && (ip as ipaddr.IPv4).match(net as ipaddr.IPv4, bits)) return name;
  }
  return undefined;
}

/**
 * A webhook URL as given, or 400 saying what is wrong with it (before any lookup). The WHATWG
 * parser forgives a lot (it drops tabs and newlines, trims spaces, reads `http:host` and
 * `http:/\\host` as `http://host`), so a URL kept as typed is not the one the sender fetches.
 * Control characters and surrounding spaces are refused here, and the caller keeps `href`.
 */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > WEBHOOK_URL_MAX) throw badRequest(`url: at most ${WEBHOOK_URL_MAX} characters`, "url");
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw badRequest("url: a webhook URL has no control characters (tab, newline, NUL …)", "url");
  if (raw.trim() !== raw) throw badRequest("url: a webhook URL has no space before or after it", "url");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest("url: not a URL", "url");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw badRequest("url: only http and https URLs are webhook targets", "url");
  // Credentials in the URL would be shown in every list; the signature authenticates instead.
  if (url.username || url.password) throw badRequest("url: a webhook URL carries no user name or password", "url");
  if (url.hash) throw badRequest("url: a webhook URL has no #fragment", "url");
  if (url.port === "0") throw badRequest("url: port 0 cannot be sent to", "url");
  return url;
}

/** How long a name may take to resolve; then it does not resolve (a delivery tries again later). */
export const RESOLVE_DEADLINE_MS = 5000;

/**
 * Every address a name has: /etc/hosts first (as getaddrinfo reads it: `localhost`, the
 * operator's own names), then DNS queries for A and AAAA. Not `dns.lookup`: getaddrinfo runs on
 * libuv's threads, of which at most two take slow work such as lookups, for the whole process,
 * so a member's names under a nameserver that never answers (anyone can delegate a domain to
 * one) queued every other lookup of the server behind theirs, other workspaces' webhooks
 * included, for the resolver's timeout each. DNS queries (c-ares) wait on sockets, not threads;
 * each name gets a resolver of its own, cancelled at RESOLVE_DEADLINE_MS.
 */
async function addressesOf(host: string): Promise<{ address: string; family: number }[]> {
  const name = host.toLowerCase().replace(/\.$/, "");
  const hosts = await readFile("/etc/hosts", "utf8").catch(() => "");
  const listed: { address: string; family: number }[] = [];
  for (const line of hosts.split("\n")) {
    const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
    if (address && names.some((n) => n.toLowerCase() === name) && ipaddr.isValid(address)) {
      listed.push({ address, family: ipaddr.parse(address).kind() === "ipv6" ? 6 : 4 });
    }
  }
  if (listed.length) return listed;
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  const deadline = setTimeout(() => resolver.cancel(), RESOLVE_DEADLINE_MS);
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    return [
      ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
  } finally {
    clearTimeout(deadline);
  }
}

/** A URL's host as an address or a name: `[::1]` is the address `::1`. */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

export interface PinnedTarget {
  url: URL;
  /** The address to connect to: checked, and the only one used for this attempt. */
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a webhook URL's host once and checks every address it gives: one that is not public
 * refuses the target (400 naming the range of an IP literal) unless `allowPrivate`. Answers the
 * first address, which the sender connects to (never resolving again). A name that does not
 * resolve is a `bad_request` too; the delivery loop treats it as a failed attempt and retries.
 */
export async function resolveTarget(raw: string, allowPrivate: boolean): Promise<PinnedTarget> {
  const url = parseWebhookUrl(raw);
  const host = hostOf(url);
  const notPublic = (why: string) => {
    // Without the allowance, a name that does not resolve and one that resolves to a refused
    // address get the same words, and neither its address: two answers would make webhook create
    // a lookup of the operator's internal names (which exist, where) for any member. The log
    // (debug) has why.
    log.debug(`webhook url: "${host}" ${why}: refused`);
    return badRequest(`url: "${host}" does not resolve to a public address; webhooks go only to public addresses unless the administrator sets HOLM_WEBHOOK_ALLOW_PRIVATE=1`, "url");
  };
  const unresolved = () => (allowPrivate ? badRequest(`url: the host "${host}" does not resolve`, "url") : notPublic("does not resolve"));
  const addresses = ipaddr.isValid(host) ? [{ address: host, family: ipaddr.parse(host).kind() === "ipv6" ? 6 : 4 }] : await addressesOf(host);
  if (addresses.length === 0) throw unresolved();
  if (!allowPrivate) {
    for (const a of addresses) {
      const range = blockedRange(a.address);
      if (!range) continue;
      // An IP literal is the caller's own: the answer may name its range.
      if (a.address === host) throw badRequest(`url: "${host}" is a ${range} address; webhooks go only to public addresses unless the administrator sets HOLM_WEBHOOK_ALLOW_PRIVATE=1`, "url");
      throw notPublic(`resolves to ${a.address}, a ${range} address`);
    }
  }
  const first = addresses[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
