import { Command, CommanderError } from "commander";
import { boxCommands } from "./boxes";
import { connect } from "./connect";
import { driveCommands } from "./drive";
import { historyCommands } from "./history";
import { opsCommands } from "./ops";
import { fail } from "./output";
import { runtimeCommands } from "./runtimes";

// `holm`: the /v1 API from a shell (seeds 001, 002), on the typed client (app/client/). The
// server is --url or HOLM_URL (default http://127.0.0.1:8080), the credential HOLM_TOKEN (a holm_sk_ key,
// a workspace or the server token; none in open mode). Built by scripts/build-cli.mjs into
// build/cli/holm.js, the package's `bin`.

declare const HOLM_VERSION: string;

const program = new Command("holm")
  .description("drive holm boxes from a shell (HOLM_URL, HOLM_TOKEN)")
  .version(typeof HOLM_VERSION === "string" ? HOLM_VERSION : "dev")
  .option("--json", "print JSON (for scripts) instead of tables and lines")
  .option("--url <url>", "the server (default: $HOLM_URL or http://127.0.0.1:8080)")
  .showHelpAfterError()
  .exitOverride();

const ctx = {
  holm: () => connect(process.env, program.opts().url),
  out: (cmd: Command) => ({ json: cmd.optsWithGlobals().json === true }),
};

boxCommands(program, ctx);
driveCommands(program, ctx);
historyCommands(program, ctx);
runtimeCommands(program, ctx);
opsCommands(program, ctx);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) process.exitCode = e.exitCode;
  else process.exitCode = fail(e);
}
