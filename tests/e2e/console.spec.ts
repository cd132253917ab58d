import { expect, test } from "@playwright/test";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

test("the console lists boxes live: a box launched through /v1 appears, goes ready, and leaves", async ({ page }) => {
  await page.goto(server.base);
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await expect(page.getByText("● live")).toBeVisible();
  await expect(page.getByRole("heading", { name: "No boxes yet" })).toBeVisible();

  // The call answers once the box is ready; the page has seen it appear meanwhile.
  const created = server.api("/v1/boxes", { method: "POST", json: {} });
  const box = await json(await created);
  const row = page.getByRole("row").filter({ hasText: box.id.slice(0, 16) });
  await expect(row).toBeVisible();
  await expect(row.getByText("ready")).toBeVisible();
  await expect(row.getByRole("cell", { name: "1280×800" })).toBeVisible();

  await server.api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
  await expect(row).toHaveCount(0);
});

test("a person launches a box from the console and removes it", async ({ page }) => {
  await page.goto(server.base);
  await expect(page.getByText("● live")).toBeVisible();
  await page.getByLabel("Width").fill("1024");
  await page.getByLabel("Height").fill("768");
  await page.getByRole("button", { name: "Launch box" }).click();
  const row = page.getByRole("row").filter({ hasText: "1024×768" });
  await expect(row.getByText("starting")).toBeVisible();
  await expect(row.getByText("ready")).toBeVisible({ timeout: 120_000 });

  page.once("dialog", (d) => void d.accept());
  await row.getByRole("button", { name: /Remove/ }).click();
  await expect(row).toHaveCount(0);
  const list = await json(await server.api("/v1/boxes"));
  expect(list.boxes.filter((b: any) => b.width === 1024)).toHaveLength(0);
});
