import { useEffect, useState } from "react";
import type { PoolStatus } from "~/models/pool-status.server";
import { Card } from "./ui";

// The warm pool as an administrator sees it on Settings (ADR 0014): how many boxes it keeps,
// how many are ready to be claimed, how many are starting to refill it, and its memory budget.
// Claims and refills happen by the second, so the card asks again (routes/settings-pool.ts)
// while the page is in view, rather than showing the numbers of the page's load.

/** How often the card asks while the page is visible. */
const EVERY_MS = 2000;

function useLivePool(initial: PoolStatus): PoolStatus {
  const [pool, setPool] = useState(initial);
  useEffect(() => setPool(initial), [initial]);
  useEffect(() => {
    if (!initial.enabled) return;
    let stopped = false;
    const ask = async () => {
      if (document.visibilityState !== "visible") return;
      try {
        const res = await fetch("/settings/pool", { headers: { accept: "application/json" } });
        if (!res.ok || stopped) return;
        const body = (await res.json()) as { pool?: PoolStatus };
        if (body.pool && !stopped) setPool(body.pool);
      } catch {
        // The server restarting or the network changing: the next ask tries again.
      }
    };
    const t = setInterval(() => void ask(), EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(t);
    };
  }, [initial]);
  return pool;
}

const GIB = 1024 ** 3;

function gib(bytes: number): string {
  return `${(bytes / GIB).toFixed(bytes % GIB ? 1 : 0)} GiB`;
}

export function PoolCard({ pool: initial }: { pool: PoolStatus }) {
  const pool = useLivePool(initial);
  return (
    <Card title="Warm pool">
      {pool.enabled ? (
        <>
          <dl aria-label="Warm pool" className="grid grid-cols-4 gap-3 text-sm">
            {(
              [
                ["Size", String(pool.size)],
                ["Ready", String(pool.ready)],
                ["Refilling", String(pool.refilling)],
                ["Memory", `${gib(pool.memory_used)} of ${gib(pool.memory_max)}`],
              ] as const
            ).map(([term, value]) => (
              <div key={term}>
                <dt className="text-slate-500">{term}</dt>
                <dd className="font-medium">{value}</dd>
              </div>
            ))}
          </dl>
          <ul className="mt-3 space-y-1 text-xs text-slate-500">
            {pool.specs.map((s) => (
              <li key={s.key}>
                {s.key === "default" ? "default spec" : `spec ${s.digest.slice(0, 12)}…`}: {s.ready} of {s.size} ready
                {s.known ? "" : " (waiting for a box of this spec to learn it)"}
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p className="text-sm text-slate-500">Off. Set HOLM_POOL (for example default=4) to keep boxes ready.</p>
      )}
    </Card>
  );
}
