import { fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { PathQuerySchema } from "~/protocol/api-box";

const route = v1({ GET: fileQuery("fileList", PathQuerySchema, 60_000) });

export const loader = route.loader, action = route.action;
