import { z } from "zod";
import { fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";

const ListQuerySchema = z.strictObject({ path: z.string().min(1).max(4096) });

const route = v1({ GET: fileQuery("fileList", ListQuerySchema, 60_000) });

export const loader = route.loader, action = route.action;
