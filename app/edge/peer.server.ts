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

// What loopback is lives in app/utils (the local CLI asks it too).
export { isLoopback, isLoopbackUrl } from "~/utils/loopback";
