import { z } from "zod";
import { ClipboardSetSchema, Path, Selection } from "./action-fields";
import { BatchSchema, StepSchema } from "./actions";
import { NOT_LYING, PRINTABLE } from "./plain-text";
import { BOX_LABELS_MAX, BOX_LABEL_KEY, BOX_LABEL_VALUE_MAX, BOX_NAME_MAX } from "./box-console";

// The queries and small bodies of the /v1 box, file, screen, history and secret routes that no
// model owns, written once here: the routes validate with them, the OpenAPI registry
// (app/edge/api-operations.server.ts) documents them, and the client (app/client/) is typed from
// them. A query's numbers come as strings, so they are coerced.

/** A trace page: "A page has at most 500 entries" (001); the default when none is asked. */
export const TRACE_PAGE_MAX = 500;
export const TRACE_PAGE_DEFAULT = 100;

// A box's name and labels (holm's, issue 14; not part of the spec or its digest). Set at create
// (`metadata` beside spec and placement) and by PATCH /v1/boxes/{id}; the console's rename and
// label chips send the same values through the same model (app/models/box-metadata.server.ts).

// No control characters, nor any that make the console show another name (plain-text.ts), and no
// space at either end (a name that looks empty is no name).
export const BoxNameSchema = z
  .string()
  .min(1, "a name needs at least one character")
  .max(BOX_NAME_MAX, `a name has at most ${BOX_NAME_MAX} characters`)
  .regex(PRINTABLE, "a name has no control characters")
  .regex(NOT_LYING, "a name has no invisible or direction-changing characters")
  .regex(/^\S(.*\S)?$/su, "a name does not start or end with a space");

export const BoxLabelsSchema = z
  .record(
    z.string().regex(BOX_LABEL_KEY, "a label key is 1–63 of a-z, 0-9, '.', '_', '/', '-', starting with a letter or digit"),
    z
      .string()
      .max(BOX_LABEL_VALUE_MAX, `a label value has at most ${BOX_LABEL_VALUE_MAX} characters`)
      .regex(PRINTABLE, "a label value has no control characters")
      .regex(NOT_LYING, "a label value has no invisible or direction-changing characters"),
  )
  .refine((labels) => Object.keys(labels).length <= BOX_LABELS_MAX, `a box has at most ${BOX_LABELS_MAX} labels`);

/** `POST /v1/boxes`: `metadata`, beside `spec` and `placement`. */
export const BoxMetadataSchema = z.strictObject({
  name: BoxNameSchema.optional(),
  labels: BoxLabelsSchema.optional(),
});

/**
 * `PATCH /v1/boxes/{id}`: `name` (null clears it), `labels` (the whole set, replacing it) and
 * `record_takeovers` (record a screen whenever a person holds it; needs the `video` feature).
 */
export const BoxPatchSchema = z.strictObject({
  name: BoxNameSchema.nullable().optional(),
  labels: BoxLabelsSchema.optional(),
  record_takeovers: z.boolean().optional(),
});

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
