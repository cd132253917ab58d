import { fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { GlobQuerySchema } from "~/protocol/api-box";

const route = v1({ GET: fileQuery("fileGlob", GlobQuerySchema, 120_000) });

export const loader = route.loader, action = route.action;
