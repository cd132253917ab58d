import type { Actor } from "~/models/actor";
import { pauseBox, removeBox, resumeBox, stopBox } from "~/models/box.server";

// The lifecycle buttons of the console (list and box page) share one path to the models.
const LIFECYCLE = {
  pause: [pauseBox, "Paused."],
  resume: [resumeBox, "Resumed."],
  stop: [stopBox, "Stopped."],
  remove: [removeBox, "Removed."],
} as const;

/** Runs a lifecycle intent from a console form; undefined when the intent is not one. */
export async function lifecycleIntent(actor: Actor, intent: string, id: string): Promise<{ ok: string } | undefined> {
  const entry = LIFECYCLE[intent as keyof typeof LIFECYCLE];
  if (!entry) return undefined;
  await entry[0](actor, id);
  return { ok: entry[1] };
}
