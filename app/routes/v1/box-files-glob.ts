import { z } from "zod";
import { fileQuery } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";

const GlobQuerySchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: z.string().min(1).max(4096).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
});

const route = v1({ GET: fileQuery("fileGlob", GlobQuerySchema, 120_000) });

export const loader = route.loader, action = route.action;
