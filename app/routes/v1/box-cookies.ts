import { browserRoute } from "~/edge/browser-route.server";
import { v1 } from "~/edge/route.server";
import { CookieQuery, SetCookiesSchema, clearCookies, contextOf, listCookies, setCookies } from "~/models/browser-cookies.server";

// GET / POST / DELETE /v1/boxes/{id}/cookies (seed: Browser state). Setting and clearing change
// what the pages see: agent input, refused while a person holds the screen.

const route = v1({
  GET: async (args) => {
    const { t, query } = await browserRoute(args, { query: CookieQuery });
    return { cookies: await listCookies(await contextOf(t), query.url) };
  },
  POST: async (args) => {
    const { t, body } = await browserRoute(args, { body: SetCookiesSchema, doing: "setting cookies" });
    return setCookies(await contextOf(t), body);
  },
  DELETE: async (args) => {
    const { t, query } = await browserRoute(args, { query: CookieQuery, doing: "clearing cookies" });
    return clearCookies(await contextOf(t), query.url);
  },
});

export const loader = route.loader, action = route.action;
