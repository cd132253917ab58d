import { log } from "~/utils/log.server";
import { SEND_CONCURRENCY, attemptDelivery, dueDeliveries, fanOut } from "./webhook-delivery.server";

// The set of delivery attempts a server has in flight (docs/decisions/0018, "Fair share"), for
// the loop (server/webhooks.ts) and for /v1/jobs/run (deliverDue). Each attempt runs on its own:
// when one ends its slot takes the next due row at once, and none waits for a slower one beside
// it. Which rows fill the free slots is dueDeliveries' fair pick: one attempt per webhook, two
// per workspace, workspaces in turn.

/** When each workspace last started an attempt (a counter: the smallest was served longest ago). */
const servedAt = new Map<string, number>();
let served = 0;

export class SendPool {
  private readonly inFlight = new Map<string, { webhook: string; owner: string; done: Promise<void> }>();

  /** `onDone` runs after each attempt ends (the loop sweeps again then). */
  constructor(private readonly onDone: () => void = () => {}) {}

  get size(): number {
    return this.inFlight.size;
  }

  /** Starts attempts for the due rows the fair pick gives, up to the free slots; how many started. */
  async fill(now: number, tried?: Set<string>): Promise<number> {
    const webhooks = new Set<string>();
    const owners = new Map<string, number>();
    for (const a of this.inFlight.values()) {
      webhooks.add(a.webhook);
      owners.set(a.owner, (owners.get(a.owner) ?? 0) + 1);
    }
    const picked = await dueDeliveries(now, { webhooks, owners, tried }, SEND_CONCURRENCY - this.inFlight.size, servedAt);
    for (const d of picked) {
      tried?.add(d.id);
      servedAt.set(d.owner, ++served);
      // Not awaited: a slow receiver holds one slot, not the caller.
      const done = attemptDelivery(d.id)
        .catch((err) => log.error({ err }, `webhook delivery ${d.id} failed`))
        .finally(() => {
          this.inFlight.delete(d.id);
          this.onDone();
        });
      this.inFlight.set(d.id, { webhook: d.webhook_id, owner: d.owner, done });
    }
    return picked.length;
  }

  /** Resolves when any attempt in flight ends (at once when none is). */
  async next(): Promise<void> {
    await Promise.race([...this.inFlight.values()].map((a) => a.done));
  }

  /** Resolves when every attempt in flight has ended. */
  async drain(): Promise<void> {
    await Promise.all([...this.inFlight.values()].map((a) => a.done));
  }
}

/**
 * One sending run for a caller without the loop (HOLM_SERVER_SCHEDULE=external: /v1/jobs/run):
 * fans new events out, then keeps the pool's slots busy with the deliveries due, each at most
 * once per call (a retry that comes due again during the call waits for the next), starting none
 * after `until`. Answers how many attempts it made, delivered or not.
 */
export async function deliverDue(until: number): Promise<number> {
  await fanOut(10_000);
  const tried = new Set<string>();
  const pool = new SendPool();
  for (;;) {
    if (Date.now() < until) await pool.fill(Date.now(), tried);
    if (pool.size === 0) break;
    await pool.next();
  }
  return tried.size;
}
