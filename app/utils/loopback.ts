// Loopback addresses and URLs: the server's open mode and its peer checks (app/edge/peer.server.ts)
// and `holm doctor` (cli/local) read the same rule.

/** 127.0.0.0/8, ::1, and their IPv4-mapped forms. Unknown is not loopback. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  return a === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** Whether a URL names this machine's loopback (localhost, 127.0.0.0/8, [::1]). */
export function isLoopbackUrl(url: string): boolean {
  const name = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return name === "localhost" || name.endsWith(".localhost") || isLoopback(name);
}
