import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { apiAs } from "../support/workspaces";
import { consoleClient } from "../support/console";

// A store restored under another server key (a `holm backup --no-key` archive restored on a
// server with a fresh secret.key): its sealed values never open again, whatever one waits for.
// Such a failure must say so: `retryable: false`, and a webhook delivery that cannot be signed
// ends at once instead of retrying for 24 hours.

let server: TestServer | undefined;
afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/** Every `{code, message, retryable}` in an answer, wherever the batch put it. */
function errorsIn(v: unknown, out: { code: string; message: string; retryable: boolean }[] = []) {
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.code === "string" && typeof o.message === "string" && "retryable" in o) out.push(o as never);
    for (const x of Object.values(o)) errorsIn(x, out);
  }
  return out;
}

it("a secret or webhook secret sealed under another key answers retryable: false, and its delivery fails at once", async () => {
  const first = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
  server = first;
  const c = consoleClient(first);
  const ada = await c.signUp("ada@example.com", "A");
  const key = (await c.createKey(ada, "a")).secret;
  let asA = apiAs(first, key);
  expect((await asA("/v1/secrets/pw", { method: "PUT", json: { value: "never-opens-again" } })).status).toBe(200);
  const hook = await json(await asA("/v1/webhooks", { method: "POST", json: { url: "http://127.0.0.1:9/hook", events: ["box.removed"] } }));
  expect(hook.id, JSON.stringify(hook)).toMatch(/^whk_/);

  // The same store under a new server key.
  await first.stop();
  fs.rmSync(path.join(first.stateDir, "secret.key"));
  server = await first.restart();
  asA = apiAs(server, key);

  const box = await json(await asA("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const typed = await json(await asA(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "type", secret_ref: "pw" }] } }));
  const errors = errorsIn(typed);
  expect(errors, JSON.stringify(typed)).toContainEqual({ code: "unavailable", message: expect.stringContaining('"pw" cannot be opened with this server\'s key'), retryable: false });

  // Removing the box makes a box.removed delivery, which cannot be signed: failed, not pending.
  expect((await asA(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
  const deadline = Date.now() + 20_000;
  let list: any[] = [];
  while (Date.now() < deadline) {
    list = (await json(await asA(`/v1/webhooks/${hook.id}/deliveries`))).deliveries;
    if (list.some((d) => d.attempts > 0)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(list, JSON.stringify(list)).toEqual([expect.objectContaining({ kind: "box.removed", status: "failed", attempts: 1, next_attempt_at_ms: null })]);
  expect(list[0].error).toMatch(/does not open with this server's key/);
}, 120_000);
