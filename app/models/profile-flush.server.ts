import { log } from "~/utils/log.server";
import { type BoxRow, boxAddress, onBeforeRemove, onBeforeStop, runtimeOf } from "./box-record.server";
import { passBrowserRestarts } from "./browser-restarts.server";
import { browserOf } from "./page-browser.server";
import { measureProfile } from "./profile-size.server";

// A browser profile's last writes (profile.server.ts), made before its box is stopped or removed,
// and its size then (profile-size.server.ts). Apart from the profile's store so that the box
// model, which takes profiles, does not reach the pages' browser connections (and they the box
// model) in a cycle; the server registers it at boot.

const FLUSH_MS = 8000;
/** The entrypoint's line for screen 0's browser quitting (X11 names it by display, Wayland by screen). */
const SCREEN_0_QUIT = / holm: chromium (?::99|0) quit \(status 0\)/;

/**
 * Chromium writes cookies out every 30 s and when it closes, not when it is sent TERM or killed
 * (tried here: a cookie set 3 s before `docker stop` was lost, also for every later box with the
 * profile; after `Browser.close` it was on disk). So before a running box with a profile is
 * stopped or removed, its screen-0 browser is closed over CDP and given up to 8 s to exit. The
 * box's entrypoint starts a browser that quit again (a kiosk, images/x11/entrypoint.sh) and says
 * so in its output, which is how the exit is seen; the box's stop follows. A stop does this in the box's
 * serial chain, so the exit watcher (box-sync.server.ts) finds the box `stopped` by the user, not
 * on its own; a resume starts Chromium again on the profile. A paused box being removed is not
 * woken for it: what it set in its last 30 s may be lost (a stop wakes it anyway, so it flushes).
 */
export function registerProfileFlush(): void {
  onBeforeRemove((row) => letGo(row, row.state === "ready"));
  onBeforeStop((row) => letGo(row, true));
}

async function letGo(row: BoxRow, running: boolean): Promise<void> {
  const placement = JSON.parse(row.placement_json) as { profile?: string };
  if (!placement.profile) return;
  // A screen-0 browser that is not there to close (it quit, and the box's entrypoint waits out a
  // pause before starting it again, or is starting it) wrote the profile out as it quit. Its
  // failure once skipped the measure below: a profile filled, then its browser quit in a loop
  // as the box went, was never refused at launch.
  if (running) {
    await flushProfile(row, placement.profile).catch((err: unknown) =>
      log.warn({ err, box: row.id }, `browser not closed for profile "${placement.profile}" (it may have quit already); measuring it as it is`),
    );
    // The entrypoint starts the browser this closed again, and logs it as a restart: it is the stop's, not one to trace.
    await passBrowserRestarts(row.id).catch((err: unknown) => log.warn({ err, box: row.id }, "the profile flush's browser quit could not be skipped"));
  }
  // After the close, so what Chromium wrote last counts; from the engine, so a box whose
  // Chromium died (out of memory, filling the profile) is measured too.
  await measureProfile(row, placement.profile);
}

async function flushProfile(row: BoxRow, profile: string): Promise<void> {
  const address = await boxAddress(row.id);
  if (!address) return;
  const box = { id: row.id, owner: row.owner, screens: row.screens, width: row.width, height: row.height, address };
  const closing = (async () => {
    const ref = row.runtime_ref;
    const lastQuit = async () => (ref ? (await runtimeOf(row).logs(ref, 50)).findLast((l) => SCREEN_0_QUIT.test(l)) : undefined);
    const before = await lastQuit();
    const browser = await browserOf(box, 0);
    const gone = new Promise<void>((resolve) => browser.once("disconnected", () => resolve()));
    const session = await browser.newBrowserCDPSession();
    await session.send("Browser.close").catch(() => undefined);
    await gone;
    // DevTools hangs up early in Chromium's shutdown, before the cookie store's last write: the
    // write is done when Chromium has exited, which the entrypoint logs (a new line: each starts
    // with its time). A box that stops instead (an image from before the kiosk) ends the wait too.
    // Only the box's own processes could print such a line early, against their own profile.
    while (ref && (await runtimeOf(row).inspect(ref)).state === "running" && (await lastQuit()) === before) {
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const began = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([closing.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), FLUSH_MS)))]).finally(() =>
    clearTimeout(timer),
  );
  if (closed) log.info({ box: row.id }, `browser closed for profile "${profile}" in ${Date.now() - began} ms`);
  else log.warn({ box: row.id }, `browser did not close in ${FLUSH_MS} ms; profile "${profile}" may miss its last 30 s`);
}
