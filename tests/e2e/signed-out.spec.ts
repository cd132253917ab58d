import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// A person signed out meanwhile (Log out in another tab) who presses a button on a page drawn
// before: the action is not done, and the log-in page they land on says so, rather than a bare
// log-in form after which they could believe it was.

let server: TestServer;
serverForSpec((s) => (server = s));

test("an action sent after signing out in another tab: the log-in page says it was not done", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Lab");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "API keys" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Lab" })).toBeVisible();

  const other = await context.newPage();
  try {
    await other.goto(`${server.base}/`);
    await other.getByRole("button", { name: "Log out" }).click();
    await expect(other.getByRole("heading", { name: "Log in to holm" })).toBeVisible();
  } finally {
    await other.close();
  }

  await page.getByLabel("Name", { exact: true }).fill("made-after-logout");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByRole("heading", { name: "Log in to holm" })).toBeVisible();
  await expect(page.getByRole("status")).toHaveText("You were signed out, so what you just did was not done. Log in, then do it again.");
  await attachShot(page, info, "signed out: log in again");

  // Logged in again: back on the keys page, where the key is indeed not made.
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Lab" })).toBeVisible();
  await expect(page.getByText("No keys yet.")).toBeVisible();
  // A log-in page opened by hand says nothing of the kind.
  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page.getByRole("heading", { name: "Log in to holm" })).toBeVisible();
  await expect(page.getByRole("status")).toHaveCount(0);
});
