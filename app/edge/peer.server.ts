// The network peer of a request, as the HTTP server saw it: the socket's address, or behind a
// proxy (HOLM_PUBLIC_URL set, express's trust proxy) the client a loopback proxy named in
// X-Forwarded-For; never a header from anyone else. The /v1 route wrapper records it from the
// load context; auth reads it for open mode.

const peers = new WeakMap<Request, string>();

export function rememberPeer(request: Request, address: string | undefined) {
  if (address) peers.set(request, address);
}

export function peerOf(request: Request): string | undefined {
  return peers.get(request);
}

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
