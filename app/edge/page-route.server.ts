import type { Actor } from "~/models/actor";
import type { RunningBox } from "~/models/box.server";
import { pageOf, screenOfTab } from "~/models/page-browser.server";
import { assertMayDrive } from "~/models/takeover.server";
import { TabRef } from "~/protocol/action-fields";
import { runningBoxOf } from "./box-route.server";
import { param, refuseBody, validate } from "./route.server";

// The box-wide Pages routes (`/v1/boxes/{id}/pages/{tab}…`, `/v1/boxes/{id}/page…`) find their
// tab the same way: by id or label on whichever screen has it (screen 0's front tab when none is
// named), then, for a route that acts on the page, the takeover check on that screen.

type RouteArgs = Parameters<typeof param>[0];

/** `?tab=` (app/protocol/api-page.ts), for the POST routes whose body does not name it. */
export { TabQuerySchema } from "~/protocol/api-page";

/** `/pages/{tab}…`: the running box, the tab named in the path and its screen, held or not (`doing`). */
export async function tabOfRoute(args: RouteArgs, doing: string) {
  const { actor, box } = await runningBoxOf(args);
  const tab = validate(TabRef, param(args, "tab"), "path");
  const t = await screenOfTab(box, tab);
  // Its routes (bring to front, close) take no body.
  await refuseBody(args.request);
  assertMayDrive(actor, box.id, t.screen, doing);
  return { actor, t, tab };
}

/**
 * `/page…`: the Playwright page of the tab (the front tab of screen 0 when `tab` is not given),
 * refused during someone else's exclusive takeover of its screen when the route acts (`doing`).
 */
export async function tabPageOf(actor: Actor, box: RunningBox, tab: string | null | undefined, doing?: string) {
  const t = await screenOfTab(box, tab);
  if (doing) assertMayDrive(actor, box.id, t.screen, doing);
  return { t, tp: await pageOf(t, tab) };
}
