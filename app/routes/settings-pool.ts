import { requireWorkspaceJson } from "~/edge/console.server";
import { poolStatus } from "~/models/pool-status.server";
import { ApiError, errorResponse } from "~/utils/api-error.server";
import type { Route } from "./+types/settings-pool";

// GET /settings/pool — the warm pool's numbers as the Settings page's card shows them
// (components/pool-card.tsx), which asks again every few seconds so a claim or a refill shows
// without a reload. The pool is the server's: its administrator only; JSON errors.

export async function loader({ request }: Route.LoaderArgs) {
  try {
    const ctx = await requireWorkspaceJson(request);
    if (!ctx.user.is_admin) throw new ApiError("forbidden", "the warm pool is the server administrator's");
    return Response.json({ pool: await poolStatus() }, { headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
