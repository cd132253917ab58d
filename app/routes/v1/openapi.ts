import { openApiDocument } from "~/edge/openapi.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { NOT_BUILT } from "./not-built-list";

// GET /v1/openapi.json, served without the bearer token like /v1/health: it describes the
// public contract (the same as this repository's source), holds nothing of any workspace, and
// the tools that read it (client generators, API explorers, `holm` before a key exists) fetch it
// without credentials. The HTTP edge's Host and Origin checks still apply. Built once: it
// depends only on the code.
let doc: Record<string, unknown> | undefined;

const route = v1({
  GET: ({ request }) => {
    refuseQuery(request);
    return (doc ??= openApiDocument(NOT_BUILT));
  },
});

export const loader = route.loader, action = route.action;
