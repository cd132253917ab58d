import { type Person, consoleClient } from "./console";
import type { TestServer } from "./server";

// Two workspaces made through the console as people would (Ada's first, then Bob's, once Ada
// opens sign-ups), each with an API key, and a /v1 fetch as each key.

export type Api = (p: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;

/** A /v1 fetch with `authorization: Bearer <key>` (the server's own `api` sends its token). */
export function apiAs(server: TestServer, key: string): Api {
  return (p, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${key}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(init.json);
    }
    return fetch(`${server.base}${p}`, { ...init, headers, body });
  };
}

export async function twoWorkspaces(server: TestServer): Promise<{ c: ReturnType<typeof consoleClient>; ada: Person; bob: Person; asA: Api; asB: Api }> {
  const c = consoleClient(server);
  const ada = await c.signUp("ada@example.com", "A");
  await c.form(ada, "/settings", { intent: "signups", open: "true", csrf: c.csrfIn(await c.page(ada, "/settings")) });
  const bob = await c.signUp("bob@example.com", "B");
  return { c, ada, bob, asA: apiAs(server, (await c.createKey(ada, "a")).secret), asB: apiAs(server, (await c.createKey(bob, "b")).secret) };
}
