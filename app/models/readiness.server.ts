import { sql } from "kysely";
import { DEFAULT_RUNTIME, runtime } from "~/runtime/index.server";
import { db } from "~/utils/db.server";
import { imageRequest, normalizeSpec } from "./spec.server";

// Readiness (GET /v1/health?ready=1): can this server do its work now? /v1/health stays the
// seed's liveness answer (the process answers); this one asks what a box needs: the store, the
// built-in engine, and the image a default box starts from. Each check is bounded, so a hung
// engine or database makes a 503 in a few seconds, not a hung probe.

export type CheckName = "store" | "engine" | "image";
export interface Check {
  ok: boolean;
  /** What failed, in words; absent when ok. */
  error?: string;
  ms: number;
}

const CHECK_MS = 3000;

async function timed(fn: () => Promise<string | undefined>): Promise<Check> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${CHECK_MS} ms`), CHECK_MS)));
  try {
    const error = await Promise.race([fn().catch((e: Error) => e.message || String(e)), late]);
    return { ok: error === undefined, ...(error === undefined ? {} : { error }), ms: Math.round(performance.now() - t0) };
  } finally {
    clearTimeout(timer);
  }
}

/** Every check at once; `ready` when all pass. */
export async function readiness(): Promise<{ ready: boolean; checks: Record<CheckName, Check> }> {
  const rt = runtime(DEFAULT_RUNTIME);
  const [store, engine, image] = await Promise.all([
    timed(async () => {
      await sql`select 1`.execute(db());
      return undefined;
    }),
    timed(async () => (!rt ? "no built-in runtime" : (await rt.ping()) ? undefined : `the ${DEFAULT_RUNTIME} engine does not answer (HOLM_DOCKER_SOCKET)`)),
    timed(async () => {
      if (!rt) return "no built-in runtime";
      const status = await rt.imageStatus(imageRequest(normalizeSpec({})));
      // A missing image is built on first need, but that first box then waits minutes.
      return status.present ? undefined : `the default box image ${status.image} is not built (holm images build, or npm run setup)`;
    }),
  ]);
  const checks = { store, engine, image };
  return { ready: store.ok && engine.ok && image.ok, checks };
}
