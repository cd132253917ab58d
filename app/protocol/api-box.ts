import { z } from "zod";
import { ClipboardSetSchema, Path, Selection } from "./action-fields";
import { BatchSchema, StepSchema } from "./actions";

// The queries and small bodies of the /v1 box, file, screen, history and secret routes that no
// model owns, written once here: the routes validate with them, the OpenAPI registry
// (app/edge/api-operations.server.ts) documents them, and the client (app/client/) is typed from
// them. A query's numbers come as strings, so they are coerced.

/** A trace page: "A page has at most 500 entries" (001); the default when none is asked. */
export const TRACE_PAGE_MAX = 500;
export const TRACE_PAGE_DEFAULT = 100;

/** `POST /v1/boxes/{id}/apps`. */
export const AppsSchema = z.strictObject({ apps: z.array(z.string().min(1).max(64)).min(1).max(20) });

/**
 * `POST …/screens/{screen}/actions` as a caller writes it. The route checks BatchSchema, then each
 * of `actions` against StepSchema on its own (so a refusal names the step): this is that same
 * pair in one schema, for the document and the client's types.
 */
export const BatchBodySchema = BatchSchema.extend({ actions: z.array(StepSchema).max(500) });

/** `GET /v1/boxes/{id}/files` and `…/files/list`: `?path=`. */
export const PathQuerySchema = z.strictObject({ path: Path });

/** `GET /v1/boxes/{id}/files/glob`. */
export const GlobQuerySchema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  path: Path.optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
});

/** `GET /v1/boxes/{id}/trace`. */
export const TraceQuerySchema = z.strictObject({
  /** Entries with seq > after; -1 (the default) reads from the start. */
  after: z.coerce.number().int().min(-1).default(-1),
  limit: z.coerce.number().int().min(1).max(TRACE_PAGE_MAX).default(TRACE_PAGE_DEFAULT),
});

/** `GET /v1/events`: "`after` (the `next` of the last read, default 0) and `limit` (default 200, maximum 1000)". */
export const EventsQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

/** `GET …/screens/{screen}/clipboard`. */
export const ClipboardQuerySchema = z.strictObject({ selection: Selection.optional() });
/** `PUT …/screens/{screen}/clipboard`. */
export { ClipboardSetSchema };

/** `POST …/screens/{screen}/recording`. */
export const RecordingStartSchema = z.strictObject({ fps: z.number().int().min(1).max(60).optional() });

/** `POST …/screens/{screen}/takeover`. */
export const TakeoverSchema = z.strictObject({ shared: z.boolean().optional() });

/** `POST …/screens/{screen}/viewer/ticket`. */
export const TicketSchema = z.strictObject({ mode: z.enum(["view", "control"]).optional() });

/** `POST /v1/boxes/{id}/cdp`: how long the token lives (000: default 1 h, at most 24 h) and its screen. */
export const CDP_TTL_DEFAULT_SECS = 3600;
export const CDP_TTL_MAX_SECS = 24 * 3600;
export const CdpQuerySchema = z.strictObject({
  ttl_secs: z.coerce.number().int().min(1).max(CDP_TTL_MAX_SECS).optional(),
  screen: z.string().regex(/^[0-9]{1,2}$/, "a screen number").optional(),
});

/** `PUT /v1/secrets/{name}`. */
export const SecretPutSchema = z.strictObject({ value: z.string() });

/** The error body of every answer that is not a success (000, "Errors"). */
export const ErrorBodySchema = z.object({
  code: z.string().describe("One of the codes of app/protocol/errors.ts; each has exactly one HTTP status."),
  message: z.string(),
  retryable: z.boolean().describe("Whether the same request can succeed later."),
});
