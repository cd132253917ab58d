import { afterAll, beforeAll, expect } from "vitest";
import { type TestServer, json, removeTestBoxes, startServer } from "./server";

// The set-up of a file whose tests share one server and one ready box (by default a desktop with
// no extra features, the quickest to start): started before the file's tests, both gone after,
// also when a test failed. `got` receives them once ready.
export function serverWithOneBox(
  got: (server: TestServer, box: any) => void,
  env: Record<string, string> = {},
  spec: Record<string, unknown> = { desktop: { features: [] } },
): void {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startServer(env);
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec } }));
    expect(box.state, JSON.stringify(box)).toBe("ready");
    got(server, box);
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    await removeTestBoxes();
  });
}
