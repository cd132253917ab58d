import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Person, consoleClient } from "../support/console";
import { type TestServer, startServer } from "../support/server";

// API key names from the Keys page, as a person makes them: a workspace's usable keys never share
// a name (its Revoke buttons and the trace's "by key …" tell them apart by it). A second key with
// an active key's name is refused at the Name field; once that key is revoked the name is free;
// another workspace has its own names.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: Person;
let bob: Person;

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  await c.form(ada, "/settings", { intent: "signups", open: "true", csrf: c.csrfIn(await c.page(ada, "/settings")) });
  bob = await c.signUp("bob@example.com", "B");
});

afterAll(async () => {
  await server?.stop();
});

const make = async (p: Person, name: string) => (await c.form(p, "/keys?index", { intent: "create", name, csrf: c.csrfIn(await c.page(p, "/keys")) })).text();
const rows = async (p: Person, name: string) => (await c.page(p, "/keys")).split(`<td class="py-2 pr-4">${name}</td>`).length - 1;

describe("API key names", () => {
  it("refuses a second active key with the same name, at the Name field, and makes none", async () => {
    const first = await c.createKey(ada, "temp");
    const html = await make(ada, " temp ");
    expect(html).toContain("a key named &quot;temp&quot; is already active in this workspace; give this one another name, or revoke that one first");
    // Said at the field: the Name input is marked invalid and described by the message.
    expect(html).toMatch(/<input[^>]*name="name"[^>]*aria-invalid="true"|<input[^>]*aria-invalid="true"[^>]*name="name"/);
    expect(html).not.toMatch(/holm_sk_[a-z2-7]{20,}/);
    expect(await rows(ada, "temp")).toBe(1);
    // Revoked, its name is free again; the old row stays (revoked) beside the new one.
    await c.form(ada, "/keys?index", { intent: "revoke", id: first.id, csrf: c.csrfIn(await c.page(ada, "/keys")) });
    expect(await make(ada, "temp")).toMatch(/holm_sk_[a-z2-7]{20,}/);
    expect(await rows(ada, "temp")).toBe(2);
  });

  it("another workspace names its keys as it likes", async () => {
    expect(await make(bob, "temp")).toMatch(/holm_sk_[a-z2-7]{20,}/);
  });
});
