import type { Command } from "commander";
import { type Out, printJson, printable, progress } from "./output";

// holm backup / restore / doctor: run on the server's machine, from its settings (the
// environment over HOLM_CONFIG_FILE, default /etc/holm/holm.env), not over /v1
// (docs/decisions/0023). Their code is build/cli/holm-local.js, loaded here only when one runs:
// it needs the install's node_modules (better-sqlite3 is native), the rest of the CLI does not.

declare const HOLM_VERSION: string;
type Local = typeof import("./local/index");
type Ctx = { out: (cmd: Command) => Out };

async function local(): Promise<Local> {
  // Not a string literal, so esbuild leaves the import to run time instead of bundling it.
  const bundle = new URL("./holm-local.js", import.meta.url).href;
  return (await import(bundle)) as Local;
}

/**
 * Runs a local command: what it refuses is said as `holm <command>: <why>` and exits 1. Not the
 * /v1 commands' `code: message`: no server answered, so there is no API error code to give.
 */
async function locally(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    process.stderr.write(`holm ${name}: ${printable((err as Error)?.message ?? String(err))}\n`);
    process.exitCode = 1;
  }
}

const STATE_DIR = ["--state-dir <dir>", "the state directory (default: HOLM_STATE_DIR)"] as const;

export function opsCommands(program: Command, ctx: Ctx) {
  program
    .command("backup")
    .description("write the local store (SQLite snapshot, trace frames, server key) to FILE (.tar.gz), while the server runs")
    .argument("<file>", "the archive to write (mode 0600)")
    .option(...STATE_DIR)
    .option("--no-key", "leave the server key (secret.key) out: sealed secrets then open only with the original")
    .action((file: string, f: { stateDir?: string; key: boolean }, cmd: Command) =>
      locally("backup", async () => {
        const manifest = await (await local()).backup(file, { stateDir: f.stateDir, key: f.key, version: typeof HOLM_VERSION === "string" ? HOLM_VERSION : "dev", say: progress });
        if (ctx.out(cmd).json) printJson(manifest);
      }),
    );

  program
    .command("restore")
    .description("unpack a holm backup into the state directory (empty, or --force); refused while a server has the store open")
    .argument("<file>", "an archive holm backup wrote")
    .option(...STATE_DIR)
    .option("--force", "replace the store, frames and key of a directory that has them")
    .option("--as-new-server", "a copy to run beside the original (a test restore): its own server id, the boxes it recorded marked removed, its browser profiles dropped, its webhooks disabled")
    .action((file: string, f: { stateDir?: string; force?: boolean; asNewServer?: boolean }, cmd: Command) =>
      locally("restore", async () => {
        const manifest = await (await local()).restore(file, { stateDir: f.stateDir, force: f.force === true, asNewServer: f.asNewServer === true, say: progress });
        if (ctx.out(cmd).json) printJson(manifest);
      }),
    );

  program
    .command("doctor")
    .description("check the engine, images, store, disk, clock and configuration on this machine; exit 1 on a failure")
    .option(...STATE_DIR)
    .action((f: { stateDir?: string }, cmd: Command) =>
      locally("doctor", async () => {
        const checks = await (await local()).doctor({ stateDir: f.stateDir });
        const failed = checks.some((c) => c.level === "fail");
        if (ctx.out(cmd).json) printJson({ ok: !failed, checks });
        else {
          for (const c of checks) {
            process.stdout.write(`${c.level.padEnd(4)}  ${c.area.padEnd(6)}  ${c.says}\n`);
            if (c.fix && c.level !== "ok") process.stdout.write(`${"".padEnd(14)}fix: ${c.fix}\n`);
          }
          const warned = checks.filter((c) => c.level === "warn").length;
          process.stdout.write(failed ? "\nsomething must be fixed before the server can run well\n" : warned ? `\n${warned} warning(s); nothing stops the server\n` : "\nall good\n");
        }
        if (failed) process.exitCode = 1;
      }),
    );
}
