import { z } from "zod";
import { MAX_WAIT_MS, Path, Query, TabRef } from "./action-fields";
import { EvaluateStep, PageShotStep } from "./page-actions";

// The queries and bodies of the box-wide Pages routes (`/v1/boxes/{id}/page…`), written once for
// the routes, the OpenAPI registry and the client (as app/protocol/api-box.ts is for the rest).

/** `?tab=`, for the POST routes whose body does not name it (evaluate, pdf, console). */
export const TabQuerySchema = z.strictObject({ tab: TabRef.optional() });

/**
 * Numbers of a query string, coerced from its text. Written as one coerced number with its
 * bounds (not `z.coerce.number().pipe(Limit)`): a pipe's JSON Schema is its input's, a bare
 * number, so OpenAPI and MCP's tool list lost the bounds.
 */
const QLimit = z.coerce.number().int().min(1).max(10_000);
const QMs30 = z.coerce.number().int().min(0).max(MAX_WAIT_MS);

/** A flag in a query string. */
const Flag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

/** `GET /v1/boxes/{id}/page`: read the page. */
export const ReadQuerySchema = z.strictObject({
  format: z.enum(["markdown", "text", "raw"]).optional(),
  limit: z.coerce.number().int().min(1).max(10_000_000).optional(),
  max_links: z.coerce.number().int().min(0).max(10_000).optional(),
  tab: TabRef.optional(),
});

/** `GET /v1/boxes/{id}/page/find`. */
export const FindQuerySchema = z.strictObject({
  q: Query,
  limit: QLimit.optional(),
  scroll: Flag.optional(),
  exact: Flag.optional(),
  role: z.string().min(1).max(100).optional(),
  tab: TabRef.optional(),
});

/** `GET /v1/boxes/{id}/page/snapshot`. */
export const SnapshotQuerySchema = z.strictObject({
  scope: Query.optional(),
  limit: QLimit.optional(),
  // true (since the last snapshot), false, or the rev of an earlier one.
  delta: z.string().min(1).max(200).optional(),
  quiet_ms: QMs30.optional(),
  tab: TabRef.optional(),
});

/** `POST /v1/boxes/{id}/page/element`'s query (its body is ElementOpSchema). */
export const ElementQuerySchema = z.strictObject({
  settle_ms: QMs30.optional(),
  tab: TabRef.optional(),
});

/** `POST /v1/boxes/{id}/page/evaluate`: the `evaluate` step's `what`. */
export const EvaluateBodySchema = EvaluateStep.shape.what;

/** `POST /v1/boxes/{id}/page/screenshot`: the `page_shot` step's `what`. */
export const ShotBodySchema = PageShotStep.shape.what.unwrap();

/** `POST /v1/boxes/{id}/page/pdf`. */
export const PdfBodySchema = z.strictObject({
  landscape: z.boolean().optional(),
  no_background: z.boolean().optional(),
  path: Path.optional(),
});

/** `POST /v1/boxes/{id}/page/console`. */
export const ConsoleBodySchema = z.strictObject({
  errors: z.boolean().optional(),
  clear: z.boolean().optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
});
