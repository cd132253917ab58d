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

/**
 * Fills the sign-up form on the page it is on and sends it (the email field is read-only when
 * an invitation names it; the workspace field is there for the first person only).
 */
export async function signUp(page: Page, name: string, email: string, workspace?: string) {
  await page.getByLabel("Name", { exact: true }).fill(name);
  if (await page.getByLabel("Email").isEditable()) await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
  await page.getByLabel("Confirm password").fill("correct horse battery");
  if (workspace) await page.getByLabel("Workspace name").fill(workspace);
  await page.getByRole("button", { name: "Create account" }).click();
}

/** Signs the first person up on a fresh server through the page and creates a key. */
export async function signUpAndKey(page: Page, server: TestServer, name = "Bench"): Promise<string> {
  await page.goto(`${server.base}/signup`);
  await signUp(page, name, `${name.toLowerCase()}@example.com`, name);
  await page.getByRole("heading", { name: "Boxes", exact: true }).waitFor();
  await page.goto(`${server.base}/keys`);
  await page.getByLabel("Name", { exact: true }).fill(name.toLowerCase());
  await page.getByRole("button", { name: "Create key" }).click();
  return (await page.getByTestId("new-key").textContent())!.trim();
}

/** Opens the box list's "Launch a box" panel if it is closed (it starts open on an empty list). */
export async function openLaunchForm(page: Page) {
  const panel = page.locator("details").filter({ has: page.getByText("Launch a box", { exact: true }) });
  if (!(await panel.evaluate((d: HTMLDetailsElement) => d.open))) await page.getByText("Launch a box", { exact: true }).click();
}
