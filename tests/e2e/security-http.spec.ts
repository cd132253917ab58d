import http from "node:http";
import type { AddressInfo } from "node:net";
import { type Page, expect, test } from "@playwright/test";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { signUp } from "../support/browser";

// The exploit from issue 10, as a person found it: on a server in open mode (no token, the
// default), a viewer's own console tab ran fetch('/v1/boxes/<id>', {method: 'DELETE', …}) and
// removed the owner's box, recorded as the server. Now /v1 with a session cookie acts as that
// person, with that person's role, only with the page's CSRF token, and the trace names them.

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer({ HOLM_SERVER_TOKEN: "" });
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

/** What the page's own script gets from a fetch to /v1. */
function fetchFrom(page: Page, url: string, init: { method: string; headers: Record<string, string> }) {
  return page.evaluate(
    async ({ url, init }) => {
      const res = await fetch(url, init);
      return { status: res.status, body: await res.text() };
    },
    { url, init },
  );
}

test("a viewer's console tab cannot remove the owner's box through /v1; the owner's can, and the trace names her", async ({ browser }) => {
  const adaContext = await browser.newContext();
  const ada = await adaContext.newPage();
  await ada.goto(server.base);
  await signUp(ada, "Ada", "ada@example.com", "Research");
  await expect(ada.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  await ada.getByRole("link", { name: "API keys" }).click();
  await ada.getByLabel("Name", { exact: true }).fill("agent");
  await ada.getByRole("button", { name: "Create key" }).click();
  const key = (await ada.getByTestId("new-key").textContent())!.trim();
  const made = await fetch(`${server.base}/v1/boxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: "{}",
  });
  const box = (await json(made)).id as string;
  expect(made.status).toBe(200);

  await ada.getByRole("link", { name: "Members" }).click();
  await ada.getByLabel("Email").fill("vic@example.com");
  await ada.getByLabel("Role", { exact: true }).selectOption("viewer");
  await ada.getByRole("button", { name: "Create invitation" }).click();
  const invite = (await ada.getByTestId("invite-link").textContent())!.trim();

  const vicContext = await browser.newContext();
  const vic = await vicContext.newPage();
  await vic.goto(invite);
  await signUp(vic, "Vic", "vic@example.com");
  await expect(vic.getByRole("row").filter({ hasText: box.slice(0, 16) })).toBeVisible();

  // Exactly what removed the box before: no CSRF token, so refused before anything happens.
  const bare = await fetchFrom(vic, `/v1/boxes/${box}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  expect(bare.status, bare.body).toBe(403);
  expect(JSON.parse(bare.body)).toMatchObject({ code: "forbidden" });

  // With the page's own token it is the viewer asking, and a viewer only watches.
  const vicCsrf = await vic.locator("input[name=csrf]").first().inputValue();
  const asViewer = await fetchFrom(vic, `/v1/boxes/${box}`, {
    method: "DELETE",
    headers: { "x-holm-confirm-delete": "true", "x-holm-csrf": vicCsrf },
  });
  expect(asViewer.status, asViewer.body).toBe(409);
  expect(JSON.parse(asViewer.body).message).toContain("viewer");
  const stillThere = await json(await fetch(`${server.base}/v1/boxes/${box}`, { headers: { authorization: `Bearer ${key}` } }));
  expect(stillThere.state).toBe("ready");
  // Reading works as the viewer.
  const seen = await fetchFrom(vic, "/v1/boxes", { method: "GET", headers: {} });
  expect(seen.status).toBe(200);
  expect(JSON.parse(seen.body).boxes.map((b: { id: string }) => b.id)).toEqual([box]);

  // The owner's tab removes it, and the trace records her, not the server.
  await ada.getByRole("link", { name: "Boxes" }).click();
  const adaCsrf = await ada.locator("input[name=csrf]").first().inputValue();
  const asOwner = await fetchFrom(ada, `/v1/boxes/${box}`, {
    method: "DELETE",
    headers: { "x-holm-confirm-delete": "true", "x-holm-csrf": adaCsrf },
  });
  expect(asOwner.status, asOwner.body).toBe(200);
  const trace = await json(await fetch(`${server.base}/v1/boxes/${box}/trace?limit=500`, { headers: { authorization: `Bearer ${key}` } }));
  const gone = trace.entries.find((e: { event: string }) => e.event === "gone");
  expect(gone).toMatchObject({ actor: "person", data: { reason: "removed", by: expect.stringMatching(/^user:/) } });
  await adaContext.close();
  await vicContext.close();
});

// Clickjacking: a page on another port of the same host (a dev server, a local tool, anything the
// person runs or opens there) is the same site as the console, so the browser sends the session
// cookie to a frame of it (SameSite=Lax). Such a page could frame the console out of sight under a
// decoy and take the person's clicks: "Create key", "Take over", "Remove". The console refuses
// to be framed by anyone, itself included.
test("a page on another port of the same host cannot show the console in a frame and take a person's clicks", async ({ browser }) => {
  // A server of its own: the first person to sign up owns it.
  const server = await startServer();
  const context = await browser.newContext();
  const host = new URL(server.base).hostname;
  const attacker = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><title>Win a prize</title><h1>Click to claim your prize</h1>
<iframe src="${server.base}/keys" style="opacity:0.01;position:absolute;top:0;left:0;width:900px;height:700px;border:0"></iframe>`);
  });
  try {
    const grace = await context.newPage();
    await grace.goto(`${server.base}/signup`);
    await signUp(grace, "Grace", "grace@example.com", "Framed");
    await expect(grace.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
    await new Promise<void>((resolve) => attacker.listen(0, host, resolve));

    const keysAnswer = grace.waitForResponse((r) => r.url() === `${server.base}/keys`);
    await grace.goto(`http://${host}:${(attacker.address() as AddressInfo).port}/`);
    // The browser asked for the page with the cookie (same site): the server's answer is what
    // keeps it out of the frame.
    const answer = await keysAnswer;
    // Chromium puts its error page in the frame instead (before the fix: the console, where a
    // click on the decoy made a key).
    const frame = grace.frames().find((f) => f !== grace.mainFrame())!;
    await expect.poll(() => frame.url()).toMatch(/^chrome-error:/);
    await expect(grace.frameLocator("iframe").getByRole("button", { name: "Create key" })).toHaveCount(0);
    expect(answer.headers()["x-frame-options"]).toBe("DENY");
    expect(answer.headers()["content-security-policy"]).toContain("; frame-ancestors 'none';");
    expect(answer.headers()["x-content-type-options"]).toBe("nosniff");
    // No key was made behind the person's back, and the console still works in its own tab.
    await grace.goto(`${server.base}/keys`);
    await expect(grace.getByRole("heading", { name: /API keys for Framed/ })).toBeVisible();
    await expect(grace.getByRole("button", { name: "Create key" })).toBeVisible();
    await expect(grace.getByText("No keys yet.")).toBeVisible();
  } finally {
    attacker.close();
    await context.close();
    await server.stop();
  }
});
