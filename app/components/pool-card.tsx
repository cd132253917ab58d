import type { PoolStatus } from "~/models/pool-status.server";
import { Card } from "./ui";

// The warm pool as an administrator sees it on Settings (ADR 0014): how many boxes it keeps,
// how many are ready to be claimed, how many are starting to refill it, and its memory budget.

const GIB = 1024 ** 3;

function gib(bytes: number): string {
  return `${(bytes / GIB).toFixed(bytes % GIB ? 1 : 0)} GiB`;
}

export function PoolCard({ pool }: { pool: PoolStatus }) {
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
