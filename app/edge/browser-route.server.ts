import { z } from "zod";
import { TabQuery } from "~/models/browser-cookies.server";
import { requireRunningBox } from "~/models/box.server";
import { screenOfTab } from "~/models/page-browser.server";
import { assertMayDrive } from "~/models/takeover.server";
import { badRequest } from "~/utils/api-error.server";
import { requireActor } from "./auth.server";
import { NoBody, param, parseQuery, readText, validate } from "./route.server";

// The steps the browser state, cookie and secret routes share, in the order they run (unknown
// box, bad query, bad body, held screen), so which refusal wins is the same on each.

type RouteArgs = Parameters<typeof param>[0];

/**
 * Reads a JSON body that carries a secret (a secret's value, a browser state's cookies): like
 * parseBody, but a body that is not JSON is refused without quoting it (JSON.parse's message
 * shows the text around the fault, which may be the secret). zod's messages name fields, never
 * values.
 */
export async function parseQuietBody<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
  const text = await readText(request);
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      throw badRequest("the body is not valid JSON");
    }
  }
  return validate(schema, raw, "body");
}

/** A browser route's body when it takes none. */
export { NoBody };

/** A browser route's query: `tab`, then the route's own fields (the OpenAPI registry builds it the same way). */
export const browserQuerySchema = <Q extends z.ZodRawShape>(shape?: Q) => z.strictObject({ ...TabQuery, ...shape });

/**
 * A box route on one screen's browser: the member role (cookies and states are credentials: a
 * viewer only watches), the running box, the query (`tab` picks the screen whose browser has
 * it; screen 0 without it), the body, then, for a route that changes what the pages see
 * (`doing`: "loading browser state"), the takeover check.
 */
export async function browserRoute<Q extends z.ZodRawShape = {}, B extends z.ZodType = typeof NoBody>(
  args: RouteArgs,
  opts: { query?: Q; body?: B; doing?: string },
) {
  const actor = await requireActor(args.request, "member");
  const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
  const query = parseQuery(args.request, browserQuerySchema(opts.query)) as z.output<z.ZodObject<typeof TabQuery & Q>>;
  const body = (await parseQuietBody(args.request, opts.body ?? NoBody)) as z.output<B>;
  const t = await screenOfTab(box, (query as { tab?: string }).tab);
  if (opts.doing) assertMayDrive(actor, box.id, t.screen, opts.doing);
  return { actor, t, query, body };
}
