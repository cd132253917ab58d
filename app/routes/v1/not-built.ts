import { requireActor } from "~/edge/auth.server";
import { v1 } from "~/edge/route.server";
import { unsupported } from "~/utils/api-error.server";
import { NOT_BUILT, type NotBuiltRoute } from "./not-built-list";

// Every route of NOT_BUILT (one route id each in app/routes.ts) lands here. The caller is
// authenticated first, as on every built route (so a wrong key is still 401), then told the
// route is not built: 400 `unsupported`. A method the seed does not give the route is 405.

/** The seed's spelling of a route pattern: `{id}` for `:id`, `…` for a splat. */
const seedPath = (path: string) => `/${path}`.replace(/:(\w+)/g, "{$1}").replace(/\*$/, "…");

function routeFor(r: NotBuiltRoute) {
  const answer = async ({ request }: { request: Request }) => {
    if (!r.open) await requireActor(request);
    throw unsupported(`${request.method} ${seedPath(r.path)} is not built on this server yet`);
  };
  return v1(Object.fromEntries(r.methods.map((m) => [m, answer])));
}

const byPattern = new Map(NOT_BUILT.map((r) => [r.path, routeFor(r).loader]));

type Args = Parameters<ReturnType<typeof v1>["loader"]>[0] & { pattern?: string };

// React Router passes the matched pattern (v1/boxes/:id/pages), which says which entry this is.
const serve = (args: Args) => {
  const route = byPattern.get((args.pattern ?? "").replace(/^\/+/, ""));
  if (!route) throw new Error(`not-built.ts reached by a pattern it does not list: ${args.pattern}`);
  return route(args);
};

export const loader = serve, action = serve;
