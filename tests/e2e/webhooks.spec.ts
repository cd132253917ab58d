import http from "node:http";
import type { AddressInfo } from "node:net";
import { type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { expectCleanOnPhone } from "../support/phone-check";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";

// The Webhooks page as a member uses it (docs/decisions/0018): add a webhook to a receiver on
// 127.0.0.1 (the server allows private targets here), see its secret once, see a delivery arrive
// in the log with its status and latency, replay it, and the receiver gets it twice; rotate its
// secret and see the new one once, its card focused. Then: Replay of a delivery still pending to a
// receiver answering 500 says so and queues nothing; two webhooks to one URL have buttons named
// apart; a webhook's URL and events are edited in place. Events are
// written into the server's store, as another process would record one (no box needed).

let server: TestServer;
const got: string[] = [];
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    got.push(body);
    res.end("ok");
  });
});
let rxUrl = "";
// A receiver that is down: its deliveries stay pending, tried again on their backoff.
const failing = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.statusCode = 500;
    res.end("down");
  });
});
let failUrl = "";

/** The heading of the element that has the focus (a card focused as a whole). */
const focusedHeading = (page: Page) => page.evaluate(() => document.activeElement?.querySelector("h2")?.textContent ?? null);

/**
 * Ada on the Webhooks page of a workspace of her own, `name`, so that each test sees only its
 * webhooks: she signs up if no one has yet (a test run alone), else logs in and makes it.
 */
async function freshWorkspace(page: Page, name: string) {
  await page.goto(`${server.base}/`);
  if (new URL(page.url()).pathname === "/signup") {
    await signUp(page, "Ada", "ada@example.com", name);
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  } else {
    await page.getByLabel("Email").fill("ada@example.com");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Log in" }).click();
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
    await page.goto(`${server.base}/workspaces/new`);
    await page.getByRole("textbox", { name: "Workspace name" }).fill(name);
    await page.getByRole("button", { name: "Create workspace" }).click();
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  }
  await page.getByRole("link", { name: "Webhooks" }).click();
  await expect(page.getByRole("heading", { name: `Webhooks for ${name}` })).toBeVisible();
}

/** Adds a webhook on the page (all events, or just `events`) and gives its id, read from the store. */
async function addWebhook(page: Page, url: string, events?: string[]): Promise<string> {
  // The page's own create form (no edit form is open meanwhile).
  const form = page;
  await form.getByRole("textbox", { name: "URL" }).fill(url);
  if (events) {
    await form.getByRole("checkbox", { name: "all events" }).uncheck();
    for (const k of events) await form.getByRole("checkbox", { name: k, exact: true }).check();
  }
  const ids = () => {
    const db = openStore(server);
    try {
      return (db.prepare("select id from webhook").all() as { id: string }[]).map((r) => r.id);
    } finally {
      db.close();
    }
  };
  const before = new Set(ids());
  await form.getByRole("button", { name: "Add webhook" }).click();
  await expect(page.getByRole("heading", { name: "Webhook created" })).toBeVisible();
  // The heading may still be the last add's: the new one is the id that was not there before.
  let made: string[] = [];
  await expect.poll(() => (made = ids().filter((id) => !before.has(id))).length).toBe(1);
  return made[0]!;
}

test.beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  await new Promise<void>((r) => failing.listen(0, "127.0.0.1", r));
  failUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/down`;
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
});

test.afterAll(async () => {
  await server?.stop();
  await new Promise((r) => receiver.close(r));
  await new Promise((r) => failing.close(r));
});

test("a member adds a webhook, sees its secret once, sees a delivery, and replays it", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "Webhooks" }).click();
  await expect(page.getByRole("heading", { name: "Webhooks for Crew" })).toBeVisible();
  await page.getByLabel("URL").fill(rxUrl);
  await page.getByRole("button", { name: "Add webhook" }).click();
  const secret = (await page.getByTestId("new-secret").textContent())!.trim();
  expect(secret).toMatch(/^whsec_/);
  await expect(page.getByRole("heading", { name: rxUrl })).toBeVisible();
  // Once: a fresh load of the page has the webhook, not its secret.
  await page.reload();
  await expect(page.getByRole("heading", { name: rxUrl })).toBeVisible();
  expect(await page.content()).not.toContain(secret);

  const db = openStore(server);
  const { owner } = db.prepare("select owner from webhook").get() as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id) values (?, 'box.paused', ?, 'box_e2e')").run(Date.now(), owner);
  db.close();

  // The log refreshes by itself.
  const rows = page.getByTestId("delivery");
  await expect(rows).toHaveCount(1, { timeout: 20_000 });
  await expect(rows.first()).toContainText("box.paused");
  await expect(rows.first()).toContainText("delivered");
  await expect(rows.first()).toContainText(/\d+ ms/);
  expect(got).toHaveLength(1);

  await page.getByRole("button", { name: /^Replay box\.paused/ }).click();
  await expect(page.getByText("Replay queued")).toBeVisible();
  await expect(rows).toHaveCount(2, { timeout: 20_000 });
  await expect(rows.first()).toContainText("(replay)");
  await expect(rows.first()).toContainText("delivered", { timeout: 20_000 });
  expect(got).toHaveLength(2);
  expect(got[1]).toBe(got[0]);

  // Rotate the secret: asked first, the new one shown once, the old one signing for 24 h more.
  await page.getByRole("button", { name: `Rotate secret of ${rxUrl}` }).click();
  await page.getByRole("button", { name: "Rotate secret", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Secret rotated" })).toBeVisible();
  // Its card, with the secret to copy, has the focus, as the created one's has.
  await expect.poll(() => focusedHeading(page)).toBe("Secret rotated");
  const rotated = (await page.getByTestId("new-secret").textContent())!.trim();
  expect(rotated).toMatch(/^whsec_/);
  expect(rotated).not.toBe(secret);
  await expect(page.getByText(/previous secret also signs until/)).toBeVisible();
  await page.reload();
  expect(await page.content()).not.toContain(rotated);
  await expect(page.getByText(/previous secret also signs until/)).toBeVisible();

  // Like every console page (tests/e2e/a11y.spec.ts): no serious axe violation, light or dark,
  // and no sideways scrolling on a 390 px phone, with a webhook and its log on it.
  await expectCleanOnPhone(page, `${server.base}/webhooks`, (phone) => expect(phone.getByTestId("delivery")).toHaveCount(2));

  // Delete asks in the page first; its button gone, the answer has the focus, not the page's body.
  await page.getByRole("button", { name: `Delete ${rxUrl}` }).click();
  await page.getByRole("button", { name: "Delete webhook" }).click();
  await expect(page.getByText("No webhooks yet")).toBeVisible();
  await expect(page.getByRole("status").filter({ hasText: "Webhook deleted" })).toBeFocused();
});

test("Replay of a delivery still pending says so, with its next try, and queues nothing", async ({ page }) => {
  await freshWorkspace(page, "Bench");
  await addWebhook(page, failUrl);
  const db = openStore(server);
  const { owner } = db.prepare("select owner from webhook where url = ?").get(failUrl) as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id) values (?, 'box.paused', ?, 'box_e2e')").run(Date.now(), owner);
  db.close();

  const rows = page.getByTestId("delivery");
  await expect(rows).toHaveCount(1, { timeout: 20_000 });
  await expect(rows.first()).toContainText("pending");
  await expect(rows.first()).toContainText("500");
  await page.getByRole("button", { name: /^Replay box\.paused #\d+/ }).click();
  const answer = page.getByRole("status").filter({ hasText: /already pending/i });
  await expect(answer).toContainText(/next try at \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  await expect(answer).toContainText("nothing new is queued");
  await expect(page.getByText("sent again now")).toHaveCount(0);
  // Still the one delivery, on the page and in the store.
  await page.reload();
  await expect(rows).toHaveCount(1);
  const store = openStore(server);
  const n = (store.prepare("select count(*) as n from webhook_delivery d join webhook w on w.id = d.webhook_id where w.url = ?").get(failUrl) as { n: number }).n;
  store.close();
  expect(n).toBe(1);
});

test("Replay on a disabled webhook says the new delivery is held until it is enabled, and so does Replay of that held one", async ({ page }) => {
  await freshWorkspace(page, "Paused");
  const id = await addWebhook(page, rxUrl);
  const db = openStore(server);
  const { owner } = db.prepare("select owner from webhook where id = ?").get(id) as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id) values (?, 'box.paused', ?, 'box_e2e')").run(Date.now(), owner);
  db.close();
  const rows = page.getByTestId("delivery");
  await expect(rows).toHaveCount(1, { timeout: 20_000 });
  await expect(rows.first()).toContainText("delivered");
  const sent = got.length;

  await page.getByRole("button", { name: `Disable ${rxUrl} (${id})`, exact: true }).click();
  await expect(page.getByText("Webhook disabled")).toBeVisible();
  await page.getByRole("button", { name: /^Replay box\.paused #\d+/ }).click();
  await expect(page.getByRole("status").filter({ hasText: /replay queued/i })).toContainText("held until the webhook is enabled");
  await expect(page.getByText("sent again now")).toHaveCount(0);
  await expect(rows).toHaveCount(2, { timeout: 20_000 });
  await expect(rows.first()).toContainText("pending");

  await page.getByRole("button", { name: /^Replay box\.paused #\d+/ }).first().click();
  const answer = page.getByRole("status").filter({ hasText: /already pending/i });
  await expect(answer).toContainText("held until the webhook is enabled");
  await expect(answer).toContainText("nothing new is queued");
  await expect(page.getByText("being tried now")).toHaveCount(0);
  expect(got.length).toBe(sent);
});

test("two webhooks to one URL: each one's buttons say which webhook they act on", async ({ page }) => {
  await freshWorkspace(page, "Twins");
  const first = await addWebhook(page, rxUrl);
  const second = await addWebhook(page, rxUrl, ["box.ready"]);
  for (const id of [first, second]) {
    // Exact names: each matches one button of the page, not both webhooks' alike.
    for (const name of [`Disable ${rxUrl} (${id})`, `Edit ${rxUrl} (${id})`, `Rotate secret of ${rxUrl} (${id})`, `Delete ${rxUrl} (${id})`]) {
      await expect(page.getByRole("button", { name, exact: true })).toHaveCount(1);
    }
  }
  // The one a person chose is the one that goes.
  await page.getByRole("button", { name: `Delete ${rxUrl} (${second})`, exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Webhook deleted" })).toBeFocused();
  await expect(page.getByRole("button", { name: `Delete ${rxUrl} (${first})`, exact: true })).toHaveCount(1);
  await expect(page.getByRole("button", { name: `Delete ${rxUrl} (${second})`, exact: true })).toHaveCount(0);
});

test("a member edits a webhook's URL and events in place; refusals are said at their field", async ({ page }) => {
  await freshWorkspace(page, "Edits");
  const id = await addWebhook(page, rxUrl);
  const db = openStore(server);
  const before = db.prepare("select sealed_secret from webhook where id = ?").get(id);
  db.close();

  await page.getByRole("button", { name: `Edit ${rxUrl} (${id})` }).click();
  const form = page.getByRole("form", { name: `Edit ${rxUrl} (${id})` });
  const url = form.getByRole("textbox", { name: "URL" });
  await expect(url).toBeFocused();
  await expect(url).toHaveValue(rxUrl);

  // A URL the server refuses: said at the URL field, which has the focus, with what was typed.
  await url.fill("ftp://example.com/x");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(url).toHaveAttribute("aria-invalid", "true");
  await expect(url).toHaveAccessibleDescription(/only http and https URLs are webhook targets/);
  await expect(url).toBeFocused();
  await expect(url).toHaveValue("ftp://example.com/x");

  // No event at all: said at the events, the first of which has the focus.
  const other = rxUrl.replace("/hook", "/other");
  await url.fill(other);
  await form.getByRole("checkbox", { name: "all events" }).uncheck();
  await form.getByRole("button", { name: "Save" }).click();
  const events = form.getByRole("group", { name: "Events" });
  await expect(events).toHaveAccessibleDescription(/at least one event/);
  await expect(form.getByRole("checkbox", { name: "all events" })).toBeFocused();

  // Saved: the form closes, the card says the new URL and events, its Edit button has the focus.
  await form.getByRole("checkbox", { name: "box.ready", exact: true }).check();
  await form.getByRole("checkbox", { name: "box.paused", exact: true }).check();
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form).toHaveCount(0);
  await expect(page.getByRole("heading", { name: other })).toBeVisible();
  await expect(page.getByText("events: box.ready, box.paused")).toBeVisible();
  await expect(page.getByRole("button", { name: `Edit ${other} (${id})` })).toBeFocused();
  await expect(page.getByRole("status").filter({ hasText: "Webhook saved" })).toBeVisible();
  // The same webhook: same id, same secret (an edit is not a re-create).
  const after = openStore(server);
  const row = after.prepare("select url, kinds_json, sealed_secret from webhook where id = ?").get(id) as { url: string; kinds_json: string; sealed_secret: unknown };
  after.close();
  expect(row.url).toBe(other);
  expect(JSON.parse(row.kinds_json)).toEqual(["box.ready", "box.paused"]);
  expect(row.sealed_secret).toEqual((before as { sealed_secret: unknown }).sealed_secret);
});
