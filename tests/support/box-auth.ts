import { createHmac } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { TestServer } from "./server";

// What only the server knows about a box, derived the way images/README.md says, from a test
// server's key: so tests and benches can speak to a box's agent and VNC as the server does.

/** The test server's key: HOLM_SECRET_KEY, else $HOLM_STATE_DIR/secret.key. */
export function serverKeyOf(server: Pick<TestServer, "env" | "stateDir">): Buffer {
  if (server.env.HOLM_SECRET_KEY) return Buffer.from(server.env.HOLM_SECRET_KEY, "utf8");
  return Buffer.from(fs.readFileSync(path.join(server.stateDir, "secret.key"), "utf8").trim(), "base64url");
}

const derive = (key: Buffer, purpose: string) => createHmac("sha256", key).update(purpose).digest("base64url");

/** The box's agent secret. */
export function agentSecretOf(server: Pick<TestServer, "env" | "stateDir">, boxId: string): string {
  return derive(serverKeyOf(server), `agent:${boxId}`);
}
