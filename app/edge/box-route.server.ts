import type { z } from "zod";
import type { Actor } from "~/models/actor";
import type { Role } from "~/models/roles";
import { getBox, requireRunningBox } from "~/models/box.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive, assertMayWriteBox } from "~/models/takeover.server";
import { agentCall } from "~/protocol/agent";
import { requireActor } from "./auth.server";
import { type Lifecycle, changeBox } from "./box-actions.server";
import { param, parseBody, parseQuery, refuseBody, v1 } from "./route.server";

// The steps the /v1 box routes share, in the order they run, so which refusal wins (unknown box,
// bad body, held screen) is the same on every route of a kind.

type RouteArgs = Parameters<typeof param>[0];

/**
 * A lifecycle route (`POST /v1/boxes/{id}/pause|resume|stop`), through the console's path
 * (`changeBox`, with its takeover check).
 */
export function lifecycleRoute(change: Exclude<Lifecycle, "remove">) {
  return v1({
    POST: async (args) => {
      const actor = await requireActor(args.request);
      // The box first (another workspace's is 404 whatever the body), then the body.
      await getBox(actor, param(args, "id"));
      await refuseBody(args.request);
      return changeBox(actor, change, param(args, "id"));
    },
  });
}

/** The caller and the running box of the route's `{id}` (a paused box waits for its resume). */
export async function runningBoxOf(args: RouteArgs, need?: Role) {
  const actor = await requireActor(args.request, need);
  const box = await requireRunningBox(actor, param(args, "id"), args.request.signal);
  return { actor, box };
}

/**
 * A box-wide write (exec, files, apps): the running box, then its body, then the takeover check
 * (`doing` names the write in the refusal: "writing a file").
 */
export async function boxWrite<S extends z.ZodType>(args: RouteArgs, schema: S, doing: string) {
  const { actor, box } = await runningBoxOf(args);
  const body = await parseBody(args.request, schema);
  assertMayWriteBox(actor, box.id, doing);
  return { actor, box, body };
}

/** A GET handler that reads the box's files through the agent, its query passed on as it is. */
export function fileQuery<S extends z.ZodType<Record<string, string | number | undefined>>>(
  route: "fileRead" | "fileList" | "fileGlob",
  schema: S,
  timeoutMs: number,
) {
  return async (args: RouteArgs) => {
    // Reading the box's files is reading everything in it (its agent's secret, Chromium's cookies,
    // what exec left): the member role, as exec and CDP need. A viewer reached them with GET.
    const { box } = await runningBoxOf(args, "member");
    const q = parseQuery(args.request, schema);
    return callAgent(box, agentCall(route, {}, q), undefined, timeoutMs, "bulk");
  };
}

/** The route's screen, refused while someone else holds it (`doing`: "focusing a window"). */
export async function drivenScreen(args: RouteArgs, doing: string) {
  const actor = await requireActor(args.request);
  const t = await requireScreen(actor, param(args, "id"), param(args, "screen"));
  assertMayDrive(actor, t.box.id, t.screen, doing);
  return { actor, t };
}
