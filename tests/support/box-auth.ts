import { createHmac } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { sign } from "../../images/x11/agent/auth";
import { vncChallengeResponse, vncPasswordFrom } from "../../app/protocol/rfb/vnc-auth";
import type { TestServer } from "./server";

// What only the server knows about a box, derived the way images/README.md says, from a test
// server's key: so tests and benches can speak to a box's agent (signed requests, its DevTools
// relay) and to its VNC server (VNC authentication) as the server does.

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

/** The box's VNC password. */
export function vncPasswordOf(server: Pick<TestServer, "env" | "stateDir">, boxId: string): string {
  return vncPasswordFrom(Buffer.from(derive(serverKeyOf(server), `vnc:${boxId}`), "base64url"));
}

/** The answer to a VNC challenge with the box's password. */
export function vncResponder(server: Pick<TestServer, "env" | "stateDir">, boxId: string): (challenge: Buffer) => Buffer {
  const password = vncPasswordOf(server, boxId);
  return (challenge) => vncChallengeResponse(password, challenge);
}

/** The Authorization header of one signed request to the box's agent. */
export function agentAuthorization(
  server: Pick<TestServer, "env" | "stateDir">,
  boxId: string,
  method: string,
  target: string,
  body?: Uint8Array | string,
): string {
  return sign(agentSecretOf(server, boxId), method, target, body);
}

/** A signed request to the box's agent at `ip`, as the server makes them. */
export function agentFetchAs(
  server: Pick<TestServer, "env" | "stateDir">,
  boxId: string,
  ip: string,
  target: string,
  init: { method?: string; body?: string } = {},
): Promise<Response> {
  const method = init.method ?? "GET";
  const headers: Record<string, string> = { authorization: agentAuthorization(server, boxId, method, target, init.body) };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return fetch(`http://${ip}:7070${target}`, { method, headers, body: init.body });
}
