import { requireActor } from "~/edge/auth.server";
import { baseUrlOf } from "~/edge/base-url.server";
import { param, parseQuery, refuseBody, v1 } from "~/edge/route.server";
import { getSettledBox } from "~/models/box.server";
import { cdpAccess, cdpUrl } from "~/models/cdp-access.server";
import { browserWsUrl, cdpBox } from "~/models/cdp-relay.server";
import { mintCdpToken } from "~/models/cdp-token.server";
import { parseScreen } from "~/models/screen.server";
import { CDP_TTL_DEFAULT_SECS, CdpQuerySchema } from "~/protocol/api-box";

// POST /v1/boxes/{id}/cdp?ttl_secs=&screen=: a CDP address with a short-lived token, for
// Playwright's connectOverCDP (`url`) and Puppeteer's browserWSEndpoint (`ws_url`). CDP drives
// the browser: the member role is needed (a viewer gets 409 `denied`). The addresses start with
// HOLM_PUBLIC_URL, or name the host the caller reached without one (docs/decisions/0011-cdp-proxy.md).
const route = v1({
  POST: async (args) => {
    const actor = await requireActor(args.request, "member");
    const box = await getSettledBox(actor, param(args, "id"));
    const q = parseQuery(args.request, CdpQuerySchema);
    await refuseBody(args.request, "this route takes no body: ttl_secs and screen go in the query");
    const screen = parseScreen(q.screen ?? "0", box);
    const { token, expires_at_ms } = mintCdpToken(actor, box, screen, q.ttl_secs ?? CDP_TTL_DEFAULT_SECS);
    const origin = baseUrlOf(args.request);
    const access = await cdpAccess(token);
    const ws_url = await browserWsUrl(access, await cdpBox(access, args.request.signal), origin, token);
    return { url: cdpUrl(origin, token), ws_url, expires_at_ms };
  },
});

export const loader = route.loader, action = route.action;
