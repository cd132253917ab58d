import { fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { PathQuerySchema as ListQuerySchema } from "~/edge/v1-schemas.server";

const route = v1({ GET: fileQuery("fileList", ListQuerySchema, 60_000) });

export const loader = route.loader, action = route.action;
