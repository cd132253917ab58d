import { requireWorkspaceJson } from "~/edge/console.server";
import { boxThumbnail } from "~/models/thumbnail.server";
import { errorResponse } from "~/utils/api-error.server";
import type { Route } from "./+types/box-thumb";

// GET /boxes/:id/thumb — the box list's thumbnail of screen 0 (app/models/thumbnail.server.ts),
// by session, any role of the box's workspace: a PNG about 320 px wide with an ETag (304 when the
// browser has it), or 204 when there is no picture yet (starting; stopped since the server
// started). Private and revalidated every time; but asked as ?v=<its current ETag> (how the list
// loads a picture it learnt of from /boxes/thumbs), it is cached for good: that URL names those
// bytes. JSON errors (401 when signed out, not the log-in page).

export async function loader({ request, params }: Route.LoaderArgs) {
  try {
    const actor = (await requireWorkspaceJson(request, "viewer", params.id)).actor;
    const thumb = await boxThumbnail(actor, params.id);
    const headers: Record<string, string> = { "cache-control": "private, no-cache" };
    if (!thumb) return new Response(null, { status: 204, headers });
    if (new URL(request.url).searchParams.get("v") === thumb.etag) headers["cache-control"] = "private, max-age=31536000, immutable";
    headers.etag = thumb.etag;
    headers["last-modified"] = new Date(thumb.captured_ms).toUTCString();
    if (request.headers.get("if-none-match") === thumb.etag) return new Response(null, { status: 304, headers });
    return new Response(new Uint8Array(thumb.png), {
      headers: { ...headers, "content-type": "image/png", "content-length": String(thumb.png.byteLength) },
    });
  } catch (e) {
    return errorResponse(e);
  }
}
