import { type Browser, type Page, expect, test } from "@playwright/test";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { signUp, openLaunchForm } from "../support/browser";

// A new person on a fresh server: sign up, make a workspace, make a key and use it like curl,
// launch a box from the console and watch it start live, remove it; then a viewer who can
// watch but not launch or remove.

let server: TestServer;
serverForSpec((s) => (server = s));

function rowFor(page: Page, boxId: string) {
  return page.getByRole("row").filter({ hasText: boxId.slice(0, 16) });
}

test.describe.configure({ mode: "serial" });

let inviteLink = "";

test("first person: sign up, workspace, key, a box from curl and from the console", async ({ page, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.goto(server.base);
  await expect(page).toHaveURL(/\/signup$/);
  await expect(page.getByRole("heading", { name: "Set up holm" })).toBeVisible();
  await signUp(page, "Ada", "ada@example.com", "Research");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await expect(page.getByText("● live")).toBeVisible();
  await expect(page.getByRole("heading", { name: "No boxes yet" })).toBeVisible();

  // A second workspace, made and switched to from the console.
  await page.goto(`${server.base}/workspaces/new`);
  await page.getByLabel("Workspace name").fill("Agents");
  await page.getByRole("button", { name: "Create workspace" }).click();
  await expect(page.getByRole("button", { name: "Workspace: Agents", exact: true })).toBeVisible();
  await expect(page.getByText("Isolated desktops in Agents")).toBeVisible();

  // A key, copied with the button, then used as curl would.
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("my agent");
  await page.getByRole("button", { name: "Create key" }).click();
  const shown = (await page.getByTestId("new-key").textContent())!.trim();
  expect(shown).toMatch(/^holm_sk_[a-z2-7]+$/);
  await page.getByRole("button", { name: "Copy key" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(shown);
  await expect(page.getByRole("cell", { name: "my agent", exact: true })).toBeVisible();

  await page.getByRole("link", { name: "Boxes" }).click();
  await expect(page.getByText("● live")).toBeVisible();
  const box = await json(
    await fetch(`${server.base}/v1/boxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${shown}`, "content-type": "application/json" },
      body: "{}",
    }),
  );
  expect(box.owner).toMatch(/^ws_/);
  const keyRow = rowFor(page, box.id);
  await expect(keyRow.getByText("ready")).toBeVisible();

  // Launch from the console: the row goes starting → ready live.
  await openLaunchForm(page);
  await page.getByLabel("Width").fill("1024");
  await page.getByLabel("Height").fill("768");
  await page.getByRole("button", { name: "Launch box" }).click();
  const row = page.getByRole("row").filter({ hasText: "1024×768" });
  await expect(row.getByText("starting")).toBeVisible();
  await expect(row.getByText("ready")).toBeVisible({ timeout: 120_000 });

  await row.getByRole("button", { name: /^Remove/ }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove box" }).click();
  await expect(row).toHaveCount(0);
  await expect(keyRow).toBeVisible();

  // Invite a viewer into this workspace.
  await page.getByRole("link", { name: "Members" }).click();
  await page.getByLabel("Email").fill("vic@example.com");
  await page.getByLabel("Role", { exact: true }).selectOption("viewer");
  await page.getByRole("button", { name: "Create invitation" }).click();
  inviteLink = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(inviteLink).toContain("/invite/");
});

test("a viewer sees the boxes but cannot launch or remove them, even by posting the form", async ({ browser }: { browser: Browser }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(inviteLink);
  await expect(page.getByText(/invited to Agents as viewer/)).toBeVisible();
  await signUp(page, "Vic", "vic@example.com");
  await expect(page.getByText("Isolated desktops in Agents")).toBeVisible();
  const rows = page.getByRole("row").filter({ hasText: "box_" });
  await expect(rows).toHaveCount(1);
  await expect(page.getByText("Launch a box")).toHaveCount(0);
  await expect(page.getByRole("button", { name: /^Remove/ })).toHaveCount(0);

  // The server refuses what the page does not offer.
  const csrf = await page.locator("input[name=csrf]").first().inputValue();
  const boxId = (await rows.first().getAttribute("data-box-id"))!;
  const forms: Record<string, string>[] = [{ intent: "launch" }, { intent: "remove", id: boxId }];
  for (const form of forms) {
    const res = await page.request.post(`${server.base}/?index`, { form: { ...form, csrf } });
    expect(res.status()).toBe(400);
    expect(await res.text()).toContain("needs the member role");
  }
  await page.reload();
  await expect(rows).toHaveCount(1);
  await context.close();
});
