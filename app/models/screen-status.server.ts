import { takeoverOf } from "./takeover.server";
import { getUser } from "./user.server";
import { allViewers, directViewersOf } from "./viewer.server";

// What the box page shows for each screen, for its first render (app/routes/box.tsx) and for
// the live pushes (server/realtime.ts): one definition, so the two cannot disagree.

/** One screen as the box page shows it: who watches, who drives, who has control. */
export interface ScreenStatus {
  box_id: string;
  screen: number;
  watching: number;
  driving: number;
  /** `by` is `user:<id>`, `key:<id>` or `server`; `by_name` the person's name when it is a user. */
  takeover: { by: string; by_name: string | null; exclusive: boolean; since_ms: number } | null;
  /** Increases with every status the server makes, so a page can drop one that arrives late. */
  seq: number;
}

let seq = 0;

/** The status of a screen now (counts and holder are read at once; the name is looked up). */
export async function screenStatus(boxId: string, screen: number): Promise<ScreenStatus> {
  const relayed = await allViewers(boxId, screen);
  // A box's direct sockets (ADR 0029) count too, as the server last heard from the box.
  const direct = directViewersOf(boxId, screen);
  const watching = relayed.watching + direct.watching;
  const driving = relayed.driving + direct.driving;
  const t = takeoverOf(boxId, screen);
  const mine = ++seq;
  const user = t?.by.startsWith("user:") ? await getUser(t.by.slice(5)).catch(() => undefined) : undefined;
  return {
    box_id: boxId,
    screen,
    watching,
    driving,
    takeover: t ? { by: t.by, by_name: user?.name ?? null, exclusive: t.exclusive, since_ms: t.since_ms } : null,
    seq: mine,
  };
}
