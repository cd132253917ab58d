import fs from "node:fs";
import type { Command } from "commander";
import type { Holm, Image } from "~/client/holm";
import { type Out, printJson, printTable, progress, when } from "./output";

// holm runtimes ls, holm images ls / build / rm (000: Runtimes and images; ADR 0017). A build's
// progress (its step and new log lines) goes to stderr; the image reference to stdout.

type Ctx = { holm: () => Holm; out: (cmd: Command) => Out };

const canList = (can: Record<string, unknown>) =>
  Object.entries(can)
    .filter(([, v]) => v)
    .map(([k, v]) => (typeof v === "number" ? `${k}=${v}` : k))
    .join(",");

export function runtimeCommands(program: Command, ctx: Ctx) {
  const runtimes = program.command("runtimes").description("the runtimes boxes run on");
  runtimes
    .command("ls")
    .description("list the runtimes and what each can do")
    .action(async (_f: unknown, cmd: Command) => {
      const list = await ctx.holm().runtimes.list();
      if (ctx.out(cmd).json) return printJson({ runtimes: list });
      printTable(
        ["NAME", "PROVIDER", "DEFAULT", "HOST", "SECRETS", "CAN"],
        list.map((r) => [r.name, r.provider, r.default ? "yes" : "", String(r.fields.host ?? ""), r.secrets_set.join(","), r.reason ? `nothing: ${r.reason}` : canList(r.can as unknown as Record<string, unknown>)]),
      );
    });

  const images = program.command("images").description("box images, built before need");
  images
    .command("ls")
    .description("list the images the server built")
    .option("--runtime <name>", "only this runtime's")
    .action(async (f: { runtime?: string }, cmd: Command) => {
      const list = await ctx.holm().images.list(f.runtime);
      if (ctx.out(cmd).json) return printJson({ images: list });
      printTable(
        ["RUNTIME", "DIGEST", "IMAGE", "STATE", "FEATURES", "PACKAGES", "BUILT"],
        list.map((i) => [i.runtime, i.digest, i.image, i.state ?? "built", i.features.join(","), i.packages.join(","), when(i.built_at_ms)]),
      );
    });
  images
    .command("build")
    .description("build the image for a spec before a box needs it; prints the image")
    .option("--runtime <name>", "the runtime", "docker")
    .option("--spec <file>", "a spec (or {spec}) as JSON; - reads stdin")
    .action(async (f: { runtime: string; spec?: string }, cmd: Command) => {
      let body = {};
      if (f.spec) {
        const raw = JSON.parse(fs.readFileSync(f.spec === "-" ? 0 : f.spec, "utf8"));
        body = raw && typeof raw === "object" && "spec" in raw ? raw : { spec: raw };
      }
      // Each new line of a build once, with its step when it changes.
      const seen = new Map<string, { step?: string; last?: string }>();
      const onProgress = (i: Image) => {
        const was = seen.get(i.digest) ?? {};
        if (i.progress?.step && i.progress.step !== was.step) progress(`${i.digest}: ${i.progress.step}`);
        const log = i.progress?.log ?? [];
        const from = was.last ? log.lastIndexOf(was.last) + 1 : 0;
        for (const line of log.slice(from)) progress(`  ${line}`);
        seen.set(i.digest, { step: i.progress?.step ?? was.step, last: log.at(-1) ?? was.last });
      };
      progress(`building on ${f.runtime}…`);
      const image = await ctx.holm().images.build(f.runtime, body, onProgress);
      if (image.state === "failed") {
        process.stderr.write(`failed: the image did not build: ${image.reason ?? "no reason given"}\n`);
        process.exitCode = 1;
        return;
      }
      if (ctx.out(cmd).json) return printJson(image);
      process.stdout.write(`${image.image}\n`);
    });
  images
    .command("rm <digest>")
    .description("remove an image (refused while a box uses it)")
    .option("--runtime <name>", "the runtime", "docker")
    .action(async (digest: string, f: { runtime: string }, cmd: Command) => {
      const out = await ctx.holm().images.remove(f.runtime, digest);
      if (ctx.out(cmd).json) return printJson(out);
      process.stdout.write(`${out.image}\n`);
    });
}
