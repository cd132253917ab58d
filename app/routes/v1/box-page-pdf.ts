import { runningBoxOf } from "~/edge/box-route.server";
import { tabPageOf } from "~/edge/page-route.server";
import { parseBody, parseQuery, v1 } from "~/edge/route.server";
import { printPdf } from "~/models/page-content.server";
import { assertMayWriteBox } from "~/models/takeover.server";
import { PdfBodySchema, TabQuerySchema } from "~/protocol/api-page";

// POST /v1/boxes/{id}/page/pdf?tab=…: prints the page. Body: {landscape, no_background, path}.
// With `path` the PDF is written into the box, a box-wide write like PUT …/files: refused while a
// person holds any screen of the box. Without, it comes back in the answer, as a read.

const route = v1({
  POST: async (args) => {
    const { actor, box } = await runningBoxOf(args);
    const { tab } = parseQuery(args.request, TabQuerySchema);
    const body = await parseBody(args.request, PdfBodySchema);
    if (body.path !== undefined) assertMayWriteBox(actor, box.id, "writing a PDF into the box");
    const { t, tp } = await tabPageOf(actor, box, tab);
    return printPdf(actor, t, tp, body);
  },
});

export const loader = route.loader, action = route.action;
