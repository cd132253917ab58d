import type { Command } from "commander";
import { type Holm, HolmApiError, type HolmEvent, type TraceEntry } from "~/client/holm";
import { describeEntry } from "~/components/trace-describe";
import { removeOnInterrupt } from "./create";
import { type Out, UsageError, jsonText, printJson, printable, progress, ticker, when } from "./output";

// holm trace, fork and events: what happened to a box, doing it again, and the event log.

type Ctx = { holm: () => Holm; out: (cmd: Command) => Out };

/** A whole-number option; `positive` refuses 0 and below too (a count: slice(0, -1) is not "at most"). */
const intOpt = (name: string, v: string | undefined, positive = false) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || (positive && n < 1)) throw new UsageError(`--${name} must be a ${positive ? "positive " : ""}whole number, not ${JSON.stringify(v)}`);
  return n;
};

/** One entry in the seed's words (001): `   6  agent    ran ls /tmp → 0`. */
const entryLine = (e: TraceEntry) => `${String(e.seq).padStart(4)}  ${printable(e.actor.padEnd(7))}  ${printable(describeEntry(e))}\n`;

const eventLine = (e: HolmEvent) =>
  `${printable(`${String(e.seq).padStart(6)}  ${when(e.at_ms)}  ${e.kind.padEnd(18)} ${e.box_id ?? ""}${e.data ? `  ${jsonText(e.data)}` : ""}`)}\n`;

/** Stops a follow on Ctrl-C or SIGTERM, quietly, with exit code 0. */
function untilInterrupted(): AbortSignal {
  const ac = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => ac.abort());
  return ac.signal;
}

/**
 * Whether the box was removed and its trace already ends with its `gone` entry (written just
 * after the box is marked removed, so a box marked but not yet entered is still followed).
 */
async function removedWithEntry(holm: Holm, box: string): Promise<boolean> {
  const state = await holm.boxes.get(box).then(
    (b) => b.state,
    (e) => (e instanceof HolmApiError && e.code === "gone" ? "gone" : undefined),
  );
  if (state !== "gone") return false;
  return (await holm.trace.all(box)).some((e) => e.event === "gone");
}

export function historyCommands(program: Command, ctx: Ctx) {
  program
    .command("trace <box>")
    .description("read the box's trace; --follow prints entries as they are recorded")
    .option("--after <seq>", "only entries after this sequence number")
    .option("--limit <n>", "at most this many entries (without --follow)")
    .option("-f, --follow", "keep printing new entries until interrupted")
    .action(async (box: string, f: { after?: string; limit?: string; follow?: boolean }, cmd: Command) => {
      const holm = ctx.holm();
      const json = ctx.out(cmd).json;
      const after = intOpt("after", f.after) ?? -1;
      const print = (e: TraceEntry) => process.stdout.write(json ? `${jsonText(e)}\n` : entryLine(e));
      if (f.follow) {
        // A removed box's trace cannot grow: the follow ends with its `gone` entry (as `kubectl
        // logs -f` does when the pod ends), and at once for a box removed before it began.
        if (await removedWithEntry(holm, box)) {
          for (const e of await holm.trace.all(box, after)) print(e);
          return;
        }
        // One JSON object a line with --json, so a script reads entries as they come.
        for await (const e of holm.trace.follow(box, { after, signal: untilInterrupted() })) {
          print(e);
          if (e.event === "gone") return;
        }
        return;
      }
      const limit = intOpt("limit", f.limit, true);
      let entries = await holm.trace.all(box, after);
      if (limit !== undefined) entries = entries.slice(0, limit);
      if (json) printJson({ entries });
      else for (const e of entries) print(e);
    });

  program
    .command("fork <box>")
    .description("make a new box that does the trace's steps again; prints the new box's id")
    .option("--up-to <seq>", "repeat the trace up to this sequence number")
    .option("--idempotency-key <key>", "the same key and body answer the first result")
    .action(async (box: string, f: { upTo?: string; idempotencyKey?: string }, cmd: Command) => {
      const holm = ctx.holm();
      const up_to = intOpt("up-to", f.upTo);
      const tick = ticker(`forking ${box}`);
      // The fork answers once its box is ready and the steps replayed: a Ctrl-C before that
      // removes the box the server makes of it (it finishes a fork whose caller left), once the
      // answer names it, as `holm new` does.
      let made: Promise<string | undefined> = Promise.resolve(undefined);
      let id: string | undefined;
      const guard = removeOnInterrupt(tick, {
        removing: "removing the fork once the server names it",
        what: () => (id ? `box ${id}` : `the fork of ${box}`),
        remove: () => made.then(async (found) => (found ? (await holm.boxes.remove(found), found) : undefined)),
      });
      tick.start(); // after the handler: see cli/output.ts ticker
      const never = new Promise<never>(() => undefined);
      try {
        const posted = holm.boxes.fork(box, { up_to }, { idempotencyKey: f.idempotencyKey });
        made = posted.then(
          (o) => (id = o.box.id),
          () => undefined,
        );
        const first = await posted;
        const settled = await holm.boxes.waitUntilSettled(first.box, { onProgress: (b) => guard.interrupted || tick.update(`${b.id} is starting`) });
        if (guard.interrupted) return await never; // the handler removes it and ends the process
        const out = { ...first, box: settled };
        const r = out.replay;
        tick.done(`${out.box.id} ${out.box.state}: replayed ${r.ok} of ${r.attempted} steps${r.stopped_at !== null ? `, stopped at entry ${r.stopped_at}` : ""}${r.skipped.length ? `, ${r.skipped.length} skipped` : ""}`);
        for (const s of r.skipped) progress(`  skipped ${s.seq} (${s.kind}): ${s.why}`);
        // Only the id on stdout, so NEW=$(holm fork "$BOX") works (001).
        if (ctx.out(cmd).json) printJson(out);
        else process.stdout.write(`${out.box.id}\n`);
      } catch (e) {
        if (guard.interrupted) return await never;
        tick.stop();
        throw e;
      } finally {
        guard.dispose();
      }
    });

  program
    .command("events")
    .description("read the event log (box created, ready, removed, taken over, …); --follow keeps reading")
    .option("--after <seq>", "only events after this sequence number")
    .option("-f, --follow", "keep printing new events until interrupted (about 2 s after they happen)")
    .action(async (f: { after?: string; follow?: boolean }, cmd: Command) => {
      const holm = ctx.holm();
      const json = ctx.out(cmd).json;
      let after = intOpt("after", f.after) ?? 0;
      if (f.follow) {
        for await (const e of holm.events.follow({ after, signal: untilInterrupted() })) process.stdout.write(json ? `${jsonText(e)}\n` : eventLine(e));
        return;
      }
      const events: HolmEvent[] = [];
      for (;;) {
        const page = await holm.events.list({ after, limit: 1000 });
        events.push(...page.events);
        after = page.next;
        if (!page.more) break;
      }
      if (json) printJson({ events, next: after });
      else for (const e of events) process.stdout.write(eventLine(e));
    });
}

