import { type Outcome, once } from "~/models/idempotency.server";
import { jsonResponse } from "~/utils/http-bodies.server";

// The HTTP part of idempotency (seed 000: `POST /v1/boxes`, `…/actions` and `…/fork` accept an
// `idempotency-key` header): the remembered outcome becomes the answer, marked when replayed.

export async function withIdempotency(scope: string, key: string | null, body: string, work: () => Promise<Outcome>): Promise<Response> {
  const { outcome, replayed } = await once(scope, key, body, work);
  const headers = replayed ? { "idempotent-replayed": "true" } : outcome.headers;
  return jsonResponse(outcome.body, { status: outcome.status, headers });
}
