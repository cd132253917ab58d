import { z } from "zod";
import { requireActor } from "~/edge/auth.server";
import { parseQuietBody } from "~/edge/quiet-body.server";
import { param, parseQuery, v1 } from "~/edge/route.server";
import { HttpUrl, SetCookiesSchema, TabQuery, clearCookies, contextOf, listCookies, setCookies } from "~/models/browser-cookies.server";
import { requireRunningBox } from "~/models/box.server";
import { screenOfTab } from "~/models/page-browser.server";
import { assertMayDrive } from "~/models/takeover.server";

// GET / POST / DELETE /v1/boxes/{id}/cookies (seed: Browser state). Cookies are credentials, so
// even reading them needs the member role (a viewer only watches). Setting and clearing change
// what the pages see: agent input, refused while a person holds the screen. Query `tab` (a holm
// addition) picks the screen whose browser has that tab; screen 0 without it.

const UrlQuery = z.strictObject({ url: HttpUrl.optional(), ...TabQuery });

async function target(args: Parameters<typeof param>[0]) {
  const actor = await requireActor(args.request, "member");
  const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
  return { actor, box };
}

const route = v1({
  GET: async (args) => {
    const { box } = await target(args);
    const q = parseQuery(args.request, UrlQuery);
    return { cookies: await listCookies(await contextOf(await screenOfTab(box, q.tab)), q.url) };
  },
  POST: async (args) => {
    const { actor, box } = await target(args);
    const q = parseQuery(args.request, z.strictObject(TabQuery));
    const body = await parseQuietBody(args.request, SetCookiesSchema);
    const t = await screenOfTab(box, q.tab);
    assertMayDrive(actor, box.id, t.screen, "setting cookies");
    return setCookies(await contextOf(t), body);
  },
  DELETE: async (args) => {
    const { actor, box } = await target(args);
    const q = parseQuery(args.request, UrlQuery);
    const t = await screenOfTab(box, q.tab);
    assertMayDrive(actor, box.id, t.screen, "clearing cookies");
    return clearCookies(await contextOf(t), q.url);
  },
});

export const loader = route.loader, action = route.action;
