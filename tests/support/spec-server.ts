import { test } from "@playwright/test";
import { type TestServer, removeTestBoxes, startServer } from "./server";

/**
 * A server for one e2e spec file: started before its tests, stopped after them, and the boxes
 * they made removed, even when a test failed. `use` is given the server (a spec keeps it in a
 * variable of its own, which its tests read).
 */
export function serverForSpec(use: (server: TestServer) => void): void {
  let server: TestServer | undefined;
  test.beforeAll(async () => {
    server = await startServer();
    use(server);
  });
  test.afterAll(async () => {
    await server?.stop();
    await removeTestBoxes();
  });
}
