import fs from "node:fs";
import path from "node:path";
import { env } from "~/utils/env.server";
import type { BoxRow } from "./box-record.server";

// Claims of pool boxes, for a restart on the memory store (ADR 0014). A pool container's labels
// were written before anyone claimed it and cannot change, and the memory store forgets the row:
// the claim is appended here (HOLM_STATE_DIR, beside secret.key) before the caller hears of the
// box, and adoption reads it. An append is one write(2): it survives kill -9 (not a power cut).
// Writing it into the container instead (docker cp) cost 150–400 ms of a claim on a busy engine.

export type Claim = Pick<
  BoxRow,
  "owner" | "placement_json" | "created_at_ms" | "expires_at_ms" | "idle_timeout_secs" | "name" | "labels_json" | "created_by" | "created_by_name"
>;

function file(): string {
  return path.join(env().HOLM_STATE_DIR, "pool-claims.jsonl");
}

/** Appends a claim; throws when it cannot be kept (the claim is then undone). */
export function recordClaim(id: string, row: Claim): void {
  const claim: Claim & { id: string } = {
    id,
    owner: row.owner,
    placement_json: row.placement_json,
    created_at_ms: row.created_at_ms,
    expires_at_ms: row.expires_at_ms,
    idle_timeout_secs: row.idle_timeout_secs,
    name: row.name,
    labels_json: row.labels_json,
    created_by: row.created_by,
    created_by_name: row.created_by_name,
  };
  fs.mkdirSync(env().HOLM_STATE_DIR, { recursive: true, mode: 0o700 });
  fs.appendFileSync(file(), `${JSON.stringify(claim)}\n`, { mode: 0o600 });
}

/** Every claim recorded, by box id (a line cut short by a crash is skipped). */
export function readClaims(): Map<string, Claim> {
  const out = new Map<string, Claim>();
  let text = "";
  try {
    text = fs.readFileSync(file(), "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    try {
      const { id, ...claim } = JSON.parse(line) as Claim & { id: string };
      if (typeof id === "string") out.set(id, claim);
    } catch {
      /* a torn or empty line */
    }
  }
  return out;
}

/** Keeps only the claims of boxes still live (at boot, after adoption). */
export function compactClaims(live: Set<string>): void {
  const kept = [...readClaims()].filter(([id]) => live.has(id));
  if (!fs.existsSync(file())) return;
  const tmp = `${file()}.tmp`;
  fs.writeFileSync(tmp, kept.map(([id, c]) => `${JSON.stringify({ id, ...c })}\n`).join(""), { mode: 0o600 });
  fs.renameSync(tmp, file());
}
