import { requireActor } from "~/edge/auth.server";
import { param, refuseQuery, v1 } from "~/edge/route.server";
import { frameHash, readBoxFrame, traceBox } from "~/models/trace.server";
import { notFound } from "~/utils/api-error.server";

const route = v1({
  GET: async (args) => {
    const actor = await requireActor(args.request);
    refuseQuery(args.request);
    const box = await traceBox(actor, param(args, "id"));
    const given = param(args, "hash");
    const hash = frameHash(given);
    const png = hash ? await readBoxFrame(box.id, hash) : undefined;
    if (!hash || !png) throw notFound(`the trace of box ${box.id} has no frame ${given}`);
    // The hash names the content, so the bytes never change.
    const etag = `"${hash}"`;
    const headers = {
      "content-type": "image/png",
      "cache-control": "private, max-age=31536000, immutable",
      etag,
    };
    if (args.request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
    return new Response(new Uint8Array(png), {
      headers: { ...headers, "content-length": String(png.byteLength) },
    });
  },
});

export const loader = route.loader, action = route.action;
