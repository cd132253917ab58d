import { bytesResponse } from "~/edge/byte-range.server";
import { requireActor } from "~/edge/auth.server";
import { param, refuseQuery, v1 } from "~/edge/route.server";
import { listRecordings, readRecordingPart, recordingOf } from "~/models/recording-store.server";
import { traceBox } from "~/models/trace.server";

// The recordings a box's trace keeps (recording.server.ts), readable as long as its trace:
//   GET /v1/boxes/{id}/trace/recordings        → {recordings: [...]}, oldest first
//   GET /v1/boxes/{id}/trace/recordings/{rid}  → the MP4, with Range for players that seek

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    const box = await traceBox(actor, param(args, "id"));
    if (args.params.rid === undefined) return { recordings: await listRecordings(box.id) };
    const { json, size } = await recordingOf(box.id, param(args, "rid"));
    return bytesResponse(args.request, size, (start, length) => readRecordingPart(json.id, start, length), {
      "content-type": "video/mp4",
      "content-disposition": `attachment; filename="${box.id}-${json.id}.mp4"`,
      // A recording never changes once kept.
      "cache-control": "private, max-age=31536000, immutable",
    });
  },
});

export const loader = route.loader, action = route.action;
