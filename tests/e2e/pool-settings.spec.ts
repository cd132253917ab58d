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
