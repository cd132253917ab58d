import { randomBytes } from "node:crypto";
import type { Box, CreateBox, Holm } from "~/client/holm";
import { fail, progress } from "./output";

// `holm new` / `holm boxes create` and Ctrl-C. `POST /v1/boxes` answers once the box is ready
// (seconds, minutes for a cold image), and the server finishes a launch whose caller left: a
// Ctrl-C that just ended the CLI left a running box whose id was never printed, until its TTL.
// So an interrupted create removes the box it was making (a user who pressed Ctrl-C wanted no
// box), says so on stderr, and then dies by the signal as an uncaught one would (exit 130).
//
// Until the create answers, the box's id is not known: the create carries a label of its own,
// `holm-cli.create=<random>`, by which the interrupted CLI finds the box among the workspace's
// (it is listed, `starting`, from the moment the server records it). The label is taken off
// again once the box is ready. A box already at the 16-label limit gets none: an interrupted
// create then waits for the answer, which names the box.

export const TAG_KEY = "holm-cli.create";
const MAX_LABELS = 16;

export interface Ticker {
  start: () => void;
  update: (label: string) => void;
  stop: () => void;
}

export async function createInterruptibly(holm: Holm, body: CreateBox, opts: { wait: boolean; tick: Ticker }): Promise<Box> {
  const labels = body.metadata?.labels ?? {};
  const tag = Object.keys(labels).length < MAX_LABELS && !(TAG_KEY in labels) ? randomBytes(8).toString("hex") : undefined;
  const tagged: CreateBox = tag ? { ...body, metadata: { ...body.metadata, labels: { ...labels, [TAG_KEY]: tag } } } : body;

  // What the interrupted CLI knows: the box's id once an answer named it, or that the create failed.
  let id: string | undefined;
  let failed = false;
  const guard = removeOnInterrupt(opts.tick, {
    removing: "removing the box being created",
    what: () => (id ? `box ${id}` : tag ? `the box labelled ${TAG_KEY}=${tag}` : "the box being created"),
    remove: () => removeMade(holm, () => ({ id, failed }), tag),
  });
  const interrupted = () => guard.interrupted;
  opts.tick.start(); // only now: a Ctrl-C from here on is this command's (cli/output.ts ticker)
  const never = new Promise<never>(() => undefined);
  try {
    let box = await holm.boxes.create(tagged).catch((e) => {
      failed = true;
      throw e;
    });
    id = box.id;
    if (opts.wait) {
      box = await holm.boxes.waitUntilSettled(box, { onProgress: (b) => interrupted() || opts.tick.update(`${b.id} is starting`) }).catch((e) => {
        failed = true;
        throw e;
      });
    }
    // The label was only for finding the box; a box still starting (--no-wait) keeps it, since
    // its labels cannot change until it is ready.
    if (tag && box.state === "ready" && !interrupted()) box = await holm.boxes.update(box.id, { labels }).catch(() => box);
    if (interrupted()) return await never; // the handler removes it and ends the process
    return box;
  } catch (e) {
    if (interrupted()) return await never;
    throw e;
  } finally {
    guard.dispose();
  }
}

/**
 * Ctrl-C (or SIGTERM) while a command makes a box: the first signal removes the box (`remove`
 * says which, once it can know) and then ends the process by the signal; a second leaves at once,
 * saying what (`what`) may be left. `dispose` once the command is done, unless interrupted.
 */
export function removeOnInterrupt(tick: Ticker, how: { removing: string; what: () => string; remove: () => Promise<string | undefined> }) {
  const state = { interrupted: false, dispose: () => undefined as void };
  const onSignal = (sig: NodeJS.Signals) => {
    if (state.interrupted) {
      // A second Ctrl-C: leave now, saying how to find what may be left.
      progress(`interrupted again: ${how.what()} may be left; see holm --json boxes ls`);
      die(sig);
    }
    state.interrupted = true;
    tick.stop();
    progress(`interrupted: ${how.removing} (Ctrl-C again to leave it)`);
    void how.remove().then(
      (removed) => {
        progress(removed ? `interrupted: removed ${removed}` : "interrupted: no box was made");
        die(sig);
      },
      (err) => {
        fail(err);
        progress(`interrupted: could not remove ${how.what()}; remove it with holm rm`);
        die(sig);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  state.dispose = () => {
    if (state.interrupted) return;
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
  return state;
}

/** The box the create made, found by id or label, removed; undefined when there was none. */
async function removeMade(holm: Holm, known: () => { id?: string; failed: boolean }, tag: string | undefined): Promise<string | undefined> {
  for (;;) {
    const { id, failed } = known();
    const found = id ?? (tag ? (await holm.boxes.list()).find((b) => b.labels?.[TAG_KEY] === tag)?.id : undefined);
    if (found) {
      await holm.boxes.remove(found);
      return found;
    }
    // A create that failed and left no box to find (refused, or its box already removed).
    if (failed) return undefined;
    // Not recorded yet (or no label): its answer, or its row, comes soon.
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Ends the process by the signal, as it would have ended with no handler (a shell sees 130). */
function die(sig: NodeJS.Signals): never {
  process.removeAllListeners(sig);
  process.kill(process.pid, sig);
  // The signal is delivered asynchronously: keep the process from ending before it lands.
  setInterval(() => undefined, 1000);
  return undefined as never;
}
