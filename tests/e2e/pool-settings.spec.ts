import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";

// The warm pool on Settings, as the server's administrator sees it: its size, how many boxes are
// ready to be claimed and how many are refilling, and its memory budget (ADR 0014).

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
  await bo.close();
});
