import type { Page } from "playwright-core";
import type { TestServer } from "./server";

// Debian's Chromium as tests and benches run it: Playwright's own browser download cannot run
// here, and a closed network makes background fetches fail noisily without these flags.
export const CHROMIUM_PATH = process.env.HOLM_CHROMIUM ?? "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Signs the first person up on a fresh server through the page and creates a key. */
export async function signUpAndKey(page: Page, server: TestServer, name = "Bench"): Promise<string> {
  await page.goto(`${server.base}/signup`);
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Email").fill(`${name.toLowerCase()}@example.com`);
  await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
  await page.getByLabel("Confirm password").fill("correct horse battery");
  await page.getByLabel("Workspace name").fill(name);
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByRole("heading", { name: "Boxes", exact: true }).waitFor();
  await page.goto(`${server.base}/keys`);
  await page.getByLabel("Name", { exact: true }).fill(name.toLowerCase());
  await page.getByRole("button", { name: "Create key" }).click();
  return (await page.getByTestId("new-key").textContent())!.trim();
}
