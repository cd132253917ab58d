import fs from "node:fs";
import type { Command } from "commander";
import type { BatchBody, Holm } from "~/client/holm";
import { type Out, UsageError, printJson, printable, progress } from "./output";

// holm batch, frame, exec and view: driving one box.

type Ctx = { holm: () => Holm; out: (cmd: Command) => Out };

const screenOf = (v: string | undefined) => {
  const n = Number(v ?? 0);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--screen must be a screen number, not ${JSON.stringify(v)}`);
  return n;
};

/** A batch file: an array of steps (001's steps.json) or a whole batch body. */
export function readBatch(file: string): BatchBody {
  const text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file === "-" ? "stdin" : file} is not JSON: ${(e as Error).message}`);
  }
  return (Array.isArray(raw) ? { actions: raw } : raw) as BatchBody;
}

export function driveCommands(program: Command, ctx: Ctx) {
  program
    .command("batch <box> <file>")
    .description("run a batch of actions: a JSON file (or - for stdin) with an array of steps or a batch body")
    .option("--screen <n>", "the screen", "0")
    .option("--idempotency-key <key>", "the same key and body answer the first result")
    .action(async (box: string, file: string, f: { screen: string; idempotencyKey?: string }, cmd: Command) => {
      const body = readBatch(file);
      const out = await ctx.holm().screens.batch(box, body, { screen: screenOf(f.screen), idempotencyKey: f.idempotencyKey });
      if (ctx.out(cmd).json) printJson(out);
      else {
        // The server takes an empty batch (it does nothing): say so rather than print nothing.
        if (out.results.length === 0) progress("the batch has no actions: nothing was done");
        out.results.forEach((r, i) => {
          const type = (body.actions[i] as { type?: string } | undefined)?.type ?? "?";
          const what = r.ok === false ? `${r.code}: ${r.message}` : "ok";
          process.stdout.write(`${String(i).padStart(3)}  ${printable(`${type.padEnd(12)} ${what}`)}\n`);
        });
      }
      // A batch that stopped at a step did not do what it was asked: a script's `set -e` sees it.
      if (out.stopped_at !== null) {
        const r = out.results[out.stopped_at] as { code?: string; message?: string } | undefined;
        process.stderr.write(`${printable(`${r?.code ?? "failed"}: the batch stopped at step ${out.stopped_at}${r?.message ? ` (${r.message})` : ""}`)}\n`);
        process.exitCode = 1;
      }
    });

  program
    .command("frame <box>")
    .description("write a screenshot (PNG) to stdout or --output: holm frame BOX > shot.png")
    .option("--screen <n>", "the screen", "0")
    .option("-o, --output <file>", "write the PNG to this file")
    .action(async (box: string, f: { screen: string; output?: string }) => {
      // A PNG on a terminal is noise that can confuse it: ask for a redirect instead.
      if (!f.output && process.stdout.isTTY) throw new UsageError("not writing a PNG to a terminal: redirect it (holm frame BOX > shot.png) or use --output FILE");
      const frame = await ctx.holm().screens.frame(box, { screen: screenOf(f.screen) });
      if (!frame.png) throw new UsageError("the box answered no image");
      if (f.output) fs.writeFileSync(f.output, frame.png);
      else process.stdout.write(frame.png);
    });

  program
    .command("exec <box> <argv...>")
    .description("run a command in the box (holm exec BOX -- ls -la); exits with its exit code")
    .option("--timeout <ms>", "stop the command after this long (at most 600000)")
    .action(async (box: string, argv: string[], f: { timeout?: string }, cmd: Command) => {
      const timeout_ms = f.timeout === undefined ? undefined : Number(f.timeout);
      if (timeout_ms !== undefined && !Number.isInteger(timeout_ms)) throw new UsageError("--timeout must be milliseconds");
      const out = await ctx.holm().boxes.exec(box, { argv, timeout_ms });
      if (ctx.out(cmd).json) printJson(out);
      else {
        process.stdout.write(out.stdout);
        process.stderr.write(out.stderr);
      }
      if (out.timed_out) process.stderr.write(`timeout: the command did not finish in time\n`);
      // 124 is timeout(1)'s code for a command stopped for taking too long.
      process.exitCode = out.timed_out ? 124 : (out.code ?? 1);
    });

  program
    .command("view <box>")
    .description("print the console URL where a person watches the box (and takes over)")
    .option("--screen <n>", "the screen", "0")
    .action(async (box: string, f: { screen: string }, cmd: Command) => {
      const b = await ctx.holm().boxes.get(box);
      const n = screenOf(f.screen);
      const url = b.viewer_urls?.[n] ?? (n === 0 ? b.viewer_url : undefined);
      if (!url) throw new UsageError(`box ${b.id} has ${b.screens} screen(s); there is no screen ${n}`);
      if (ctx.out(cmd).json) printJson({ id: b.id, screen: n, url });
      else process.stdout.write(`${url}\n`);
    });

  program
    .command("cdp <box>")
    .description("print a CDP address for Playwright's connectOverCDP (--ws: the WebSocket, for Puppeteer)")
    .option("--screen <n>", "the screen", "0")
    .option("--ttl <secs>", "how long the address works, in seconds (at most 86400)")
    .option("--ws", "print ws_url (Puppeteer's browserWSEndpoint) instead of url")
    .action(async (box: string, f: { screen: string; ttl?: string; ws?: boolean }, cmd: Command) => {
      const ttl = f.ttl === undefined ? undefined : Number(f.ttl);
      if (ttl !== undefined && !Number.isInteger(ttl)) throw new UsageError(`--ttl must be a whole number of seconds, not ${JSON.stringify(f.ttl)}`);
      const out = await ctx.holm().boxes.cdp(box, { screen: String(screenOf(f.screen)), ttl_secs: ttl });
      if (ctx.out(cmd).json) printJson(out);
      else process.stdout.write(`${f.ws ? out.ws_url : out.url}\n`);
    });
}
