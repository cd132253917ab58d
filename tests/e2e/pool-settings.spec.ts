import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The warm pool on Settings, as the server's administrator sees it: its size, how many boxes are
// ready to be claimed and how many are refilling, and its memory budget (ADR 0014), following
// the pool as it changes without a reload.

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer({ HOLM_POOL: "default=1", HOLM_POOL_MAX_MEMORY: "4g" });
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

test("Settings shows the administrator the pool filling: size, ready, refilling, memory", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.goto(`${server.base}/settings`);
  await expect(page.getByRole("heading", { name: "Warm pool" })).toBeVisible();
  const pool = page.locator("section").filter({ has: page.getByRole("heading", { name: "Warm pool" }) });
  await expect(pool.getByRole("term")).toHaveText(["Size", "Ready", "Refilling", "Memory"]);
  // The page is rendered on the server: reload until the one box is ready.
  await expect(async () => {
    await page.reload();
    await expect(pool.getByRole("definition")).toHaveText(["1", "1", "0", "2 GiB of 4 GiB"], { timeout: 500 });
  }).toPass({ timeout: 60_000 });
  await expect(page.getByText("default spec: 1 of 1 ready")).toBeVisible();
});

test("a member who is not the administrator sees no pool on Settings, and its page carries none of it", async ({ page, browser }) => {
  // Ada (signed up above, the server's administrator) invites Bo into her workspace.
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
  await page.getByRole("button", { name: /log in/i }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.goto(`${server.base}/members`);
  await page.getByLabel("Email").fill("bo@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  const link = (await page.getByTestId("invite-link").first().textContent())!.trim();

  const bo = await browser.newContext();
  const boPage = await bo.newPage();
  await boPage.goto(link);
  await signUp(boPage, "Bo", "bo@example.com");
  await expect(boPage.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  const res = await boPage.goto(`${server.base}/settings`);
  const html = (await res?.text()) ?? "";
  await expect(boPage.getByRole("heading", { name: "Warm pool" })).toHaveCount(0);
  // Not hidden in the page: the server never sends it (the loader's data is in the HTML).
  expect(html).not.toContain("Warm pool");
  expect(html).not.toContain("memory_max");
  // Nor through the route's data request.
  const data = await boPage.request.get(`${server.base}/settings.data`);
  expect(await data.text()).not.toContain("memory_max");
  // Nor through the card's own endpoint, which the administrator's page asks every few seconds.
  const live = await boPage.request.get(`${server.base}/settings/pool`);
  expect(live.status()).toBe(403);
  expect(await live.text()).not.toContain("memory_max");
  await bo.close();
});

test("the pool card follows the pool without a reload: a spec learnt from its first box, then filled", async ({ page }) => {
  // The digest of an 800×600 desktop, from a box of it (removed at once).
  const made = await json(await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { width: 800, height: 600 } } } }));
  const digest = String(made.spec_digest);
  expect(digest).toMatch(/^[0-9a-f]{64}$/);
  await server.api(`/v1/boxes/${made.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });

  // A server whose pool keeps one box of that spec, which it cannot start before a box of the
  // spec tells it what the spec is.
  const other = await startServer({ HOLM_POOL: `${digest}=1`, HOLM_POOL_MAX_MEMORY: "4g" });
  try {
    await page.goto(`${other.base}/signup`);
    await signUp(page, "Ada", "ada@example.com", "Crew");
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
    await page.goto(`${other.base}/settings`);
    const card = page.locator("section").filter({ has: page.getByRole("heading", { name: "Warm pool" }) });
    await expect(card.getByText(`spec ${digest.slice(0, 12)}…: 0 of 1 ready (waiting for a box of this spec to learn it)`)).toBeVisible();
    await expect(card.getByRole("definition")).toHaveText(["1", "0", "0", "0 GiB of 4 GiB"]);

    // A box of the spec (not from the pool: it has none yet) teaches the pool; the open page
    // shows it filling, then full, with no reload.
    let reloaded = false;
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) reloaded = true;
    });
    const first = await json(await other.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { width: 800, height: 600 } } } }));
    await expect(card.getByText(`spec ${digest.slice(0, 12)}…: 1 of 1 ready`, { exact: true })).toBeVisible({ timeout: 60_000 });
    await expect(card.getByRole("definition")).toHaveText(["1", "1", "0", "2 GiB of 4 GiB"]);
    expect(reloaded).toBe(false);
    await other.api(`/v1/boxes/${first.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });

    // The card's numbers are the administrator's: another member's request for them is refused.
    const asStranger = await fetch(`${other.base}/settings/pool`);
    expect(asStranger.status).toBe(401);
  } finally {
    await other.stop();
  }
});
