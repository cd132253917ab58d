// The warm pool's ready lists (pool.server.ts): which pool boxes of each spec a claim may take,
// and the launches under way.

/** Ready pool boxes by spec digest, oldest first; a claim takes one synchronously, so never twice. */
export const ready = new Map<string, string[]>();

/**
 * A spec's ready list, changed in place only: a claim holds it across awaits and puts back a box
 * the quota refused it, and a list replaced meanwhile (a refill landing) lost that box to no list,
 * a ready container no claim or sweep ever saw again.
 */
export function readyOf(digest: string): string[] {
  let list = ready.get(digest);
  if (!list) ready.set(digest, (list = []));
  return list;
}

/** Takes a box off its spec's ready list (it is being claimed, retired, or is no longer ready). */
export function drop(digest: string, id: string): void {
  const list = ready.get(digest);
  const at = list?.indexOf(id) ?? -1;
  if (at >= 0) list!.splice(at, 1);
}

/** Boxes of each spec a claim has taken off the ready list and may yet put back (a quota refusal). */
export const claiming = new Map<string, number>();

/** Pool launches under way, by spec digest. */
export const refilling = new Map<string, number>();
