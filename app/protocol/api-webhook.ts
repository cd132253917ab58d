import { z } from "zod";
import { WEBHOOK_EVENT_KINDS } from "./webhook-events";

// The bodies and queries of /v1/webhooks (holm's, issue 16; docs/decisions/0018), written once:
// the routes validate with them, the OpenAPI registry documents them, the console sends the same
// values. Unknown keys are refused, as everywhere on /v1.

export { WEBHOOK_EVENT_KINDS };

/** Webhooks one workspace may have. */
export const WEBHOOKS_PER_OWNER = 20;

const Kinds = z
  .array(z.enum([...WEBHOOK_EVENT_KINDS, "*"]))
  .min(1, "name at least one event kind, or \"*\" for all")
  .max(WEBHOOK_EVENT_KINDS.length + 1)
  .refine((l) => new Set(l).size === l.length, "each kind once")
  .describe('Event kinds to deliver (seed 000, "Events"); "*" delivers every kind.');

const Url = z.string().min(1).max(2048).describe("An http or https URL on a public address (private ones only when the administrator allows them).");

/** `POST /v1/webhooks`. */
export const WebhookCreateSchema = z.strictObject({
  url: Url,
  events: Kinds,
  /** Given, or made by the server; shown once in the answer to this request, never again. */
  secret: z
    .string()
    .min(16, "a secret has at least 16 characters")
    .max(256, "a secret has at most 256 characters")
    .regex(/^[\x21-\x7e]+$/, "a secret is printable ASCII without spaces")
    .optional()
    .describe("The signing secret; the server makes one when none is given. Returned once, in this answer."),
  enabled: z.boolean().optional(),
});

/** `PATCH /v1/webhooks/{id}`: any of these, at least one. */
export const WebhookPatchSchema = z
  .strictObject({ url: Url.optional(), events: Kinds.optional(), enabled: z.boolean().optional() })
  .refine((b) => Object.keys(b).length > 0, "give at least one of url, events, enabled");

/** The longest a rotated-out secret may go on signing: a week. */
export const ROTATE_GRACE_MAX_SECS = 7 * 24 * 3600;

/** `POST /v1/webhooks/{id}/secret`: a new secret; the previous one signs too for `grace_secs`. */
export const WebhookRotateSchema = z.strictObject({
  grace_secs: z
    .number()
    .int()
    .min(0)
    .max(ROTATE_GRACE_MAX_SECS)
    .default(24 * 3600)
    .describe("How long the previous secret goes on signing beside the new one (a second v1= in Holm-Signature). Default 86400 (24 h); 0 drops it at once."),
});

/** `GET /v1/webhooks/{id}/deliveries`: the newest first. */
export const DeliveriesQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** `POST …/deliveries/{delivery}/replay` takes no body. */
export const ReplayBodySchema = z.strictObject({});

export type WebhookCreate = z.output<typeof WebhookCreateSchema>;
export type WebhookPatch = z.output<typeof WebhookPatchSchema>;
export type WebhookRotate = z.output<typeof WebhookRotateSchema>;

/** One delivery as /v1 and the console show it (the log of a webhook). */
export interface DeliveryInfo {
  id: string;
  event_seq: number;
  kind: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  created_at_ms: number;
  last_attempt_at_ms: number | null;
  next_attempt_at_ms: number | null;
  last_status: number | null;
  latency_ms: number | null;
  error: string | null;
  replay_of: string | null;
}
