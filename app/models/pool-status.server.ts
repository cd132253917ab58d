import { env } from "~/utils/env.server";
import { parseBytes } from "~/utils/size";
import { ready, refilling } from "./pool-ready.server";
import { entries, poolPlacement, poolRows } from "./pool-row.server";
import { boxMemory } from "./spec.server";

// What the warm pool (pool.server.ts) holds, as the console's Settings and the stats show it.

export interface PoolStatus {
  enabled: boolean;
  size: number;
  ready: number;
  refilling: number;
  memory_used: number;
  memory_max: number;
  specs: {
    key: string;
    digest: string;
    size: number;
    ready: number;
    refilling: number;
    known: boolean;
  }[];
}

/** The pool as the console's Settings shows it to an administrator. */
export async function poolStatus(): Promise<PoolStatus> {
  const specs = (await entries()).map((e) => ({
    key: e.key,
    digest: e.digest,
    size: e.size,
    ready: ready.get(e.digest)?.length ?? 0,
    refilling: refilling.get(e.digest) ?? 0,
    known: !!e.spec,
  }));
  const rows = await poolRows();
  return {
    enabled: !!env().HOLM_POOL,
    size: specs.reduce((a, s) => a + s.size, 0),
    ready: specs.reduce((a, s) => a + s.ready, 0),
    refilling: specs.reduce((a, s) => a + s.refilling, 0),
    memory_used: rows.length * parseBytes(boxMemory(poolPlacement())),
    memory_max: parseBytes(env().HOLM_POOL_MAX_MEMORY),
    specs,
  };
}
