import { baseUrlOf } from "~/edge/base-url.server";
import { v1 } from "~/edge/route.server";
import { cdpAccess } from "~/models/cdp-access.server";
import { DEVTOOLS_ANSWER_TYPE, cdpBox, relayDevtoolsHttp } from "~/models/cdp-relay.server";

// `any /v1/cdp/{token}/json` and `/json/…`: Chromium's DevTools HTTP endpoints through the
// server. No bearer: the token in the path is the credential, checked with its issuer's access
// on every call (app/models/cdp-access.server.ts). The HTTP edge has already refused a
// cross-site Origin and a non-JSON body (server/http-edge.ts), so a web page that learnt a
// token still cannot read an answer. The token never reaches a log.

const relay = async ({ request, params }: { request: Request; params: Record<string, string | undefined> }) => {
  const token = params.token ?? "";
  const access = await cdpAccess(token);
  const box = await cdpBox(access, request.signal);
  const url = new URL(request.url);
  const rest = url.pathname.slice(url.pathname.indexOf("/json") + "/json".length);
  const method = request.method === "HEAD" ? "GET" : request.method;
  const out = await relayDevtoolsHttp(access, box, method, rest, url.search, baseUrlOf(request), token);
  return new Response(out.text, { status: out.status, headers: { "content-type": DEVTOOLS_ANSWER_TYPE, "cache-control": "no-store" } });
};

const route = v1({ GET: relay, POST: relay, PUT: relay, PATCH: relay, DELETE: relay });

export const loader = route.loader, action = route.action;
