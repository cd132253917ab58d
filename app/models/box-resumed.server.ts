import { log } from "~/utils/log.server";

// What must happen once a box runs again after a pause or stop, before the resume answers: models
// that keep state in the box (which a frozen box could not be told, and a restarted one forgot)
// register here. A leaf, so box.server.ts need not import them (and no cycle forms).

type Hook = (boxId: string) => Promise<void>;
const hooks: Hook[] = [];

export function onBoxResumed(hook: Hook): void {
  hooks.push(hook);
}

/** Runs every hook; a failing one is logged (the resume itself has happened). */
export async function boxResumed(boxId: string): Promise<void> {
  await Promise.all(hooks.map((h) => h(boxId).catch((err) => log.error({ err, box: boxId }, "a resume hook failed"))));
}
