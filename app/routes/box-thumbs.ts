import { z } from "zod";
import { requireWorkspaceJson } from "~/edge/console.server";
import { parseQuery } from "~/edge/route.server";
import { THUMBS_MAX, thumbnailEtags } from "~/models/thumbnail.server";
import { errorResponse } from "~/utils/api-error.server";
import type { Route } from "./+types/box-thumbs";

// GET /boxes/thumbs?ids=box_a,box_b — the current ETag of each visible row's thumbnail, in one
// request for the whole list (app/models/thumbnail.server.ts): `{thumbs: {id: etag | null}}`,
// leaving out boxes the person does not see. The list then loads a picture only when its ETag
// changed, as /boxes/:id/thumb?v=<etag>. By session, any role, in `workspace` (the list's) when
// given, else the current one; JSON errors.

const QuerySchema = z.strictObject({
  ids: z
    .string()
    .max(THUMBS_MAX * 70)
    .transform((s) => s.split(",").filter(Boolean))
    .refine((ids) => ids.length <= THUMBS_MAX, `at most ${THUMBS_MAX} ids`),
  // The workspace the list was drawn for (a stale tab's, after another switched): its boxes, if a member.
  workspace: z.string().max(100).optional(),
});

export async function loader({ request }: Route.LoaderArgs) {
  try {
    const { ids, workspace } = parseQuery(request, QuerySchema);
    const actor = (await requireWorkspaceJson(request, "viewer", { workspace })).actor;
    return Response.json({ thumbs: await thumbnailEtags(actor, ids) }, { headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
