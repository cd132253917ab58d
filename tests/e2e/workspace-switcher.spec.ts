import { type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, startServer } from "../support/server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// The header's workspace switcher as a keyboard and screen-reader user meets it: a disclosure
// button naming the current workspace, opening a list of the person's workspaces (the current one
// marked) and "New workspace…". Moving through it with the arrow keys switches nothing; only
// pressing a workspace does (every tab shares the session's current workspace, WCAG 3.2.2).
// Escape closes it back to its button. Without JavaScript the same buttons are there.

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
});

test.describe.configure({ mode: "serial" });

/** Every POST to the switch route the page makes from now on. */
function countSwitches(page: Page): { n: number } {
  const seen = { n: 0 };
  page.on("request", (r) => {
    // The router posts to /workspace.data; a form without a script, to /workspace.
    if (r.method() === "POST" && /^\/workspace(\.data)?$/.test(new URL(r.url()).pathname)) seen.n++;
  });
  return seen;
}

test("the switcher: a list to browse with the keys, New workspace…, Escape, and a click to switch", async ({ page }, info) => {
  refuseNativeDialogs(page);
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Research");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  // Two more workspaces, each through the switcher's "New workspace…".
  for (const name of ["Second", "Third"]) {
    await page.getByRole("button", { name: /^Workspace: / }).click();
    const create = page.getByRole("link", { name: "New workspace…" });
    await expect(create).toHaveAttribute("href", "/workspaces/new");
    await create.click();
    await page.getByLabel("Workspace name").fill(name);
    await page.getByRole("button", { name: "Create workspace" }).click();
    await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  }

  await page.goto(`${server.base}/keys`);
  await expect(page.getByRole("heading", { name: "API keys for Third" })).toBeVisible();
  const switches = countSwitches(page);
  const toggle = page.getByRole("button", { name: "Workspace: Third" });
  await expect(toggle).toHaveAttribute("aria-expanded", "false");

  // Arrow keys on the closed button switch nothing.
  await toggle.focus();
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowUp");

  // Open: the list names every workspace, the current one marked; arrows move, never switch.
  await page.keyboard.press("Enter");
  await expect(toggle).toHaveAttribute("aria-expanded", "true");
  const list = page.getByRole("list", { name: "Your workspaces" });
  await expect(list.getByRole("button")).toHaveCount(3);
  for (const [i, name] of ["Research (owner)", "Second (owner)", "Third (owner)"].entries()) {
    await expect(list.getByRole("button").nth(i)).toHaveAccessibleName(name);
  }
  await expect(list.getByRole("button", { name: "Third (owner)" })).toHaveAttribute("aria-current", "true");
  await expect(list.locator("[aria-current]")).toHaveCount(1);
  await page.keyboard.press("Tab");
  await expect(list.getByRole("button", { name: "Research (owner)" })).toBeFocused();
  await page.keyboard.press("ArrowDown");
  await expect(list.getByRole("button", { name: "Second (owner)" })).toBeFocused();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowUp");
  await expect(list.getByRole("button", { name: "Second (owner)" })).toBeFocused();
  await attachShot(page, info, "the switcher open on the keys page, Second focused");

  // Escape closes it and brings focus back to its button.
  await page.keyboard.press("Escape");
  await expect(toggle).toHaveAttribute("aria-expanded", "false");
  await expect(list).toHaveCount(0);
  await expect(toggle).toBeFocused();
  await page.waitForLoadState("networkidle");
  expect(switches.n).toBe(0);
  await expect(page.getByRole("heading", { name: "API keys for Third" })).toBeVisible();

  // Enter on a workspace switches to it; focus is back on the switcher's button, naming it.
  await page.keyboard.press("Enter");
  await page.keyboard.press("Tab");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "API keys for Second" })).toBeVisible();
  expect(switches.n).toBe(1);
  const now = page.getByRole("button", { name: "Workspace: Second" });
  await expect(now).toHaveAttribute("aria-expanded", "false");
  await expect(now).toBeFocused();

  // With the mouse: two clicks, as with the old drop-down.
  await now.click();
  await page.getByRole("button", { name: "Research (owner)" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Research" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Workspace: Research" })).toBeVisible();

  // A click elsewhere closes an open list.
  await page.getByRole("button", { name: "Workspace: Research" }).click();
  await expect(page.getByRole("list", { name: "Your workspaces" })).toBeVisible();
  await page.getByRole("heading", { name: "API keys for Research" }).click();
  await expect(page.getByRole("list", { name: "Your workspaces" })).toHaveCount(0);
});

test("without JavaScript the switcher's buttons and New workspace… are there and work", async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.goto(`${server.base}/keys`);
  await expect(page.getByRole("heading", { name: "API keys for Research" })).toBeVisible();
  // The button that needs a script to open is not offered.
  await expect(page.getByRole("button", { name: /^Workspace: / })).toHaveCount(0);
  const list = page.getByRole("list", { name: "Your workspaces" });
  await expect(list.getByRole("button", { name: "Research (owner)" })).toHaveAttribute("aria-current", "true");
  await expect(list.getByRole("link", { name: "New workspace…" })).toHaveAttribute("href", "/workspaces/new");
  await list.getByRole("button", { name: "Third (owner)" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Third" })).toBeVisible();
  await context.close();
});
