import { afterAll, beforeAll, expect, it } from "vitest";
import type { Person } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";

// The console's forms carry the workspace their page was drawn for (`page_workspace`), and the
// box list's thumbnails ask with `workspace=`: both are the client's to write. Bob, who belongs
// only to workspace B, puts workspace A's id in them: every form is refused and changes nothing in
// A, and the thumbnails of A's box stay hidden.

let server: TestServer;
let c: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let ada: Person;
let bob: Person;
let asA: Api;

beforeAll(async () => {
  server = await startServer();
  ({ c, ada, bob, asA } = await twoWorkspaces(server));
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const pageWorkspace = (html: string) => /name="page_workspace" value="([^"]+)"/.exec(html)![1]!;

it("a forged page_workspace or thumbnail workspace naming someone else's workspace is refused and changes nothing there", async () => {
  const aId = pageWorkspace(await c.page(ada, "/keys"));
  const bId = pageWorkspace(await c.page(bob, "/keys"));
  expect(aId).not.toBe(bId);
  const csrf = c.csrfIn(await c.page(bob, "/keys"));
  const forged: [string, Record<string, string>][] = [
    ["/keys?index", { intent: "create", name: "bobs-key-in-a" }],
    ["/members", { intent: "invite", email: "mallory@example.com", role: "admin" }],
    ["/settings", { intent: "secret-put", name: "BOB_IN_A", value: "planted-by-bob" }],
  ];
  for (const [url, fields] of forged) {
    const res = await c.form(bob, url, { ...fields, csrf, page_workspace: aId });
    const text = await res.text();
    expect(res.status, `${url}: ${text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
    expect(text, url).toContain("you are not a member of the workspace this page is for");
  }
  // Nothing landed in A: no key, no invitation, no secret.
  expect(await c.page(ada, "/keys")).not.toContain("bobs-key-in-a");
  expect(await c.page(ada, "/members")).not.toContain("mallory@example.com");
  expect((await json(await asA("/v1/secrets"))).secrets).toEqual([]);

  // A's box, asked for by its id with A's workspace named: refused, no thumbnail of it.
  const box = await json(await asA("/v1/boxes", { method: "POST", json: {} }));
  const thumbs = await fetch(`${server.base}/boxes/thumbs?ids=${box.id}&workspace=${aId}`, { headers: { cookie: bob.cookie } });
  const body = await thumbs.json();
  expect(thumbs.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
  expect(JSON.stringify(body)).not.toContain(box.id);
  // Ada, naming her own workspace, sees it.
  const own = await fetch(`${server.base}/boxes/thumbs?ids=${box.id}&workspace=${aId}`, { headers: { cookie: ada.cookie } });
  expect(Object.keys((await own.json()).thumbs)).toEqual([box.id]);
});
