import { env, publicUrl } from "~/utils/env.server";

/**
 * The base of an absolute URL handed to a client (a CDP address, a box's devtools_url): with
 * HOLM_PUBLIC_URL set, that URL, as viewer_url is; else the origin the client reached, whose Host
 * the HTTP edge checked (trust proxy is off then, so no X-Forwarded-Host counts). Behind a proxy
 * the request's host may come from X-Forwarded-Host, which a client can send through a proxy
 * that does not overwrite it: a capability token must never go to a host the client named.
 */
export function baseUrlOf(request: Request): string {
  return env().HOLM_PUBLIC_URL ? publicUrl() : new URL(request.url).origin;
}
