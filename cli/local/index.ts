// The commands that run on the server's machine instead of over /v1 (docs/decisions/0023):
// bundled apart (build/cli/holm-local.js, its npm packages left to node_modules, better-sqlite3
// being native) and loaded by build/cli/holm.js only when one of them runs, so the rest of the
// CLI stays one file that runs anywhere.
export { backup } from "./backup";
export { doctor } from "./doctor";
export { restore } from "./restore";
