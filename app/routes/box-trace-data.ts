import { z } from "zod";
import { requireWorkspaceJson } from "~/edge/console.server";
import { parseQuery } from "~/edge/route.server";
import { bytesResponse } from "~/edge/byte-range.server";
import type { Actor } from "~/models/actor";
import { noteBrowserRestartsOf } from "~/models/browser-restarts.server";
import { readRecordingPart, recordingOf } from "~/models/recording-store.server";
import { TRACE_PAGE_DEFAULT, TRACE_PAGE_MAX, frameHash, readBoxFrame, readTrace, traceBox } from "~/models/trace.server";
import { ApiError, errorResponse, notFound } from "~/utils/api-error.server";

// What the console's trace page fetches, by session (the /v1 twins take bearer tokens):
//   GET /boxes/:id/trace/entries?after&limit   → {entries, next}, at most 500 a page
//   GET /boxes/:id/trace/frames/:hash          → the frame's PNG, cached for good (content-addressed)
//   GET /boxes/:id/trace/recordings/:rid       → a kept recording's MP4, with Range (the player seeks)
// Both answer JSON errors (401 when signed out, not the log-in page).

const EntriesQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(-1).default(-1),
  limit: z.coerce.number().int().min(1).max(TRACE_PAGE_MAX).default(TRACE_PAGE_DEFAULT),
});

async function sessionActor(request: Request, id: string): Promise<Actor> {
  return (await requireWorkspaceJson(request, "viewer", id)).actor;
}

async function entries(request: Request, id: string): Promise<Response> {
  const actor = await sessionActor(request, id);
  const q = parseQuery(request, EntriesQuerySchema);
  const box = await traceBox(actor, id);
  // A browser that quit and was started again is read from the box's log (browser-restarts.server.ts).
  if (!box.removed) await noteBrowserRestartsOf(box.id);
  const page = await readTrace(box.id, { after: q.after, limit: q.limit });
  return Response.json(page, { headers: { "cache-control": "no-store" } });
}

async function frame(request: Request, id: string, given: string): Promise<Response> {
  const actor = await sessionActor(request, id);
  const box = await traceBox(actor, id);
  const hash = frameHash(given);
  const png = hash ? await readBoxFrame(box.id, hash) : undefined;
  if (!hash || !png) throw notFound(`the trace of box ${box.id} has no frame ${given}`);
  const etag = `"${hash}"`;
  const headers = { "content-type": "image/png", "cache-control": "private, max-age=31536000, immutable", etag };
  if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  return new Response(new Uint8Array(png), { headers: { ...headers, "content-length": String(png.byteLength) } });
}

async function recording(request: Request, id: string, rid: string): Promise<Response> {
  const actor = await sessionActor(request, id);
  const box = await traceBox(actor, id);
  const { json, size } = await recordingOf(box.id, rid);
  return bytesResponse(request, size, (start, length) => readRecordingPart(json.id, start, length), { "content-type": "video/mp4", "cache-control": "private, max-age=31536000, immutable" });
}

export async function loader({ request, params }: { request: Request; params: Record<string, string | undefined> }) {
  try {
    if (request.method !== "GET" && request.method !== "HEAD") {
      throw new ApiError("method_not_allowed", `${request.method} is not allowed here; use GET`);
    }
    const id = params.id ?? "";
    if (params.rid !== undefined) return await recording(request, id, params.rid);
    return params.hash !== undefined ? await frame(request, id, params.hash) : await entries(request, id);
  } catch (e) {
    return errorResponse(e);
  }
}
