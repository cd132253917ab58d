import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// The console's small courtesies, as a person meets them: the launch form explains itself, the
// "Launching …" banner belongs to that launch only and the form empties after it, and removing a
// box is asked in the page, by the box's name, never with the browser's confirm().

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

test("launch form help, a banner that does not go stale, and removal asked in the page by name", async ({ page }, info) => {
  refuseNativeDialogs(page);
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Grace", "grace@example.com", "Ops");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await expect(page.getByText("● live")).toBeVisible();

  // Every feature says what it gives the box, tied to its checkbox.
  const form = page.getByRole("form", { name: "Launch a box" });
  await expect(form.getByRole("checkbox", { name: /Wide fonts/ })).toHaveAccessibleDescription(/Chinese, Japanese, Korean and emoji/);
  await expect(form.getByRole("checkbox", { name: /No network/ })).toHaveAccessibleDescription(/reaches nothing outside it/);
  await expect(form.getByRole("spinbutton", { name: "Lifetime (minutes)" })).toHaveAccessibleDescription(/removed this long after launch/);
  await attachShot(page, info, "launch form with help");

  // Launch: the banner names the box; the form is empty again for the next one.
  await form.getByLabel("Name (optional)").fill("polish-one");
  await form.getByRole("button", { name: "Launch box" }).click();
  const banner = page.getByRole("status").filter({ hasText: "Launching polish-one" });
  await expect(banner).toBeVisible();
  await expect(form.getByLabel("Name (optional)")).toHaveValue("");
  // Dismissed, it stays gone (done at once: by itself it goes after 10 s, and a busy machine
  // boots the box slower than that); the next action's answer replaces it rather than joining it.
  await banner.getByRole("button", { name: "Dismiss" }).click();
  await expect(page.getByText("Launching polish-one")).toHaveCount(0);
  const row = page.getByRole("row").filter({ hasText: "polish-one" });
  await expect(row.getByText("ready", { exact: true })).toBeVisible({ timeout: 120_000 });
  await expect(page.getByText("Launching polish-one")).toHaveCount(0);
  await row.getByRole("button", { name: /^Pause/ }).click();
  await expect(row.getByText("paused", { exact: true })).toBeVisible();
  await expect(page.getByText("Launching polish-one")).toHaveCount(0);

  // Remove asks in the page, with the box's name; Cancel keeps the box.
  await row.getByRole("button", { name: /^Remove/ }).click();
  const ask = page.getByRole("dialog", { name: "Remove polish-one?" });
  await expect(ask).toBeVisible();
  await attachShot(page, info, "remove asked in the page");
  await ask.getByRole("button", { name: "Cancel" }).click();
  await expect(ask).toBeHidden();
  await expect(row).toBeVisible();
  await row.getByRole("button", { name: /^Remove/ }).click();
  await page.getByRole("dialog", { name: "Remove polish-one?" }).getByRole("button", { name: "Remove box" }).click();
  await expect(row).toHaveCount(0);
});
