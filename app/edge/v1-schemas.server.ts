import { z } from "zod";
import { TRACE_PAGE_DEFAULT, TRACE_PAGE_MAX } from "~/models/trace.server";
import { Limit, Ms30, Query, TabRef } from "~/protocol/action-fields";

// Query and body schemas of /v1 routes that were written in the route module, here so that the
// MCP tools (app/mcp/) take exactly what the route validates (docs/decisions/0013). They cannot
// stay exported from the route modules: React Router keeps a route module's other exports in the
// client bundle, and some of these read server constants.

/** GET /v1/boxes/{id}/page/snapshot. */
export const SnapshotQuerySchema = z.strictObject({
  scope: Query.optional(),
  limit: z.coerce.number().pipe(Limit).optional(),
  // true (since the last snapshot), false, or the rev of an earlier one.
  delta: z.string().min(1).max(200).optional(),
  quiet_ms: z.coerce.number().pipe(Ms30).optional(),
  tab: TabRef.optional(),
});

/** GET /v1/boxes/{id}/page. */
export const ReadQuerySchema = z.strictObject({
  format: z.enum(["markdown", "text", "raw"]).optional(),
  limit: z.coerce.number().int().min(1).max(10_000_000).optional(),
  max_links: z.coerce.number().int().min(0).max(10_000).optional(),
  tab: TabRef.optional(),
});

/** POST /v1/boxes/{id}/page/element (its query; the body is ElementOpSchema). */
export const ElementQuerySchema = z.strictObject({
  settle_ms: z.coerce.number().pipe(Ms30).optional(),
  tab: TabRef.optional(),
});

/** GET /v1/boxes/{id}/trace. */
export const TraceQuerySchema = z.strictObject({
  /** Entries with seq > after; -1 (the default) reads from the start. */
  after: z.coerce.number().int().min(-1).default(-1),
  limit: z.coerce.number().int().min(1).max(TRACE_PAGE_MAX).default(TRACE_PAGE_DEFAULT),
});

/** POST /v1/boxes/{id}/screens/{screen}/takeover. */
export const TakeoverSchema = z.strictObject({ shared: z.boolean().optional() });

/** POST /v1/boxes/{id}/screens/{screen}/viewer/ticket. */
export const TicketSchema = z.strictObject({ mode: z.enum(["view", "control"]).optional() });

/** GET /v1/boxes/{id}/files and GET /v1/boxes/{id}/files/list. */
export const PathQuerySchema = z.strictObject({ path: z.string().min(1).max(4096) });
