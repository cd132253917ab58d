import { type Browser, type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// The members and keys pages as the people of a workspace use them: a key's form starts empty
// again and the key names who made it; an invitation's link is copied, renewed (the old link
// stops working) and revoked (so does the new one); each person's last visit and keys show; a
// refused role change puts the select back on the real role; a banner belongs to the last action
// only. And the trace names the person who took a screen and gave it back.

let server: TestServer;
serverForSpec((s) => (server = s));

test.describe.configure({ mode: "serial" });

let adaKey = "";
let boKey = "";

const roleSelect = (page: Page, email: string) => page.getByRole("combobox", { name: `Role of ${email}`, exact: true });
const memberRow = (page: Page, email: string) => page.getByRole("row").filter({ hasText: email });

/** Opens `link` in a fresh browser (nobody signed in) and returns what the page says of it. */
async function linkWorks(browser: Browser, link: string): Promise<boolean> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(link);
  const invited = page.getByText(/You are invited to Crew as/);
  const stale = page.getByText("This invitation link no longer works", { exact: false });
  await expect(invited.or(stale)).toBeVisible();
  const works = await invited.isVisible();
  await context.close();
  return works;
}

test("keys: the form starts empty after a key is made, and each key names who made it", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.goto(server.base);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  await page.getByRole("link", { name: "API keys" }).click();
  const name = page.getByLabel("Name", { exact: true });
  await name.fill("agent-1");
  await page.getByLabel("Expires after (days)").fill("30");
  await page.getByRole("button", { name: "Create key" }).click();
  adaKey = (await page.getByTestId("new-key").textContent())!.trim();
  expect(adaKey).toMatch(/^holm_sk_/);
  await expect(name).toHaveValue("");
  await expect(page.getByLabel("Expires after (days)")).toHaveValue("");
  const row = page.getByRole("row").filter({ hasText: "agent-1" });
  await expect(row.getByRole("cell", { name: "Ada", exact: true })).toBeVisible();
  await attachShot(page, info, "keys: made, form empty, creator shown", { fullPage: true });

  // A second key: the first key's card gives way to the second's.
  await name.fill("agent-2");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByRole("heading", { name: "Key “agent-2” created" })).toBeVisible();
  await expect(page.getByRole("heading", { name: "Key “agent-1” created" })).toHaveCount(0);
  await expect(name).toHaveValue("");

  // Revoking says so, and the message can be dismissed.
  await page.getByRole("button", { name: "Revoke agent-2" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click();
  const revoked = page.getByRole("status").filter({ hasText: "Key revoked" });
  await expect(revoked).toBeVisible();
  // The new key's card went with the next action.
  await expect(page.getByTestId("new-key")).toHaveCount(0);
  await revoked.getByRole("button", { name: "Dismiss" }).click();
  await expect(revoked).toHaveCount(0);
});

test("invitations: copy the link, a new link stops the old one, revoke stops the new one; the form starts empty", async ({ page, context, browser }, info) => {
  refuseNativeDialogs(page);
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("link", { name: "Members" }).click();

  // Bo, as admin: the link is shown with Copy, and the form is empty again.
  await page.getByLabel("Email").fill("bo@example.com");
  await page.getByLabel("Role", { exact: true }).selectOption("admin");
  await page.getByRole("button", { name: "Create invitation" }).click();
  await expect(page.getByText("Invitation for bo@example.com as admin")).toBeVisible();
  const boLink = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(boLink).toContain("/invite/");
  await page.getByRole("button", { name: "Copy link" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(boLink);
  await expect(page.getByLabel("Email")).toHaveValue("");
  await expect(page.getByLabel("Role", { exact: true })).toHaveValue("member");
  await expect(page.getByTestId("invitation").filter({ hasText: "bo@example.com" })).toContainText("Invited by Ada");

  // Cy: invited, then a new link; the first link no longer works, the new one does.
  await page.getByLabel("Email").fill("cy@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  await expect(page.getByText("Invitation for cy@example.com as member")).toBeVisible();
  const first = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(first).not.toBe(boLink);
  await page.getByRole("button", { name: "New link for cy@example.com" }).click();
  await expect(page.getByText("New link for cy@example.com as member")).toBeVisible();
  const second = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(second).not.toBe(first);
  await page.getByRole("button", { name: "Copy link" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(second);
  await attachShot(page, info, "members: a new link with Copy, pending invitations", { fullPage: true });
  expect(await linkWorks(browser, first)).toBe(false);
  expect(await linkWorks(browser, second)).toBe(true);

  // Revoke, confirmed in the page: gone from the list, and the link stops working.
  await page.getByRole("button", { name: "Revoke the invitation for cy@example.com" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("Revoke the invitation for cy@example.com?");
  await attachShot(page, info, "members: revoke asks in the page");
  await dialog.getByRole("button", { name: "Revoke invitation" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Invitation for cy@example.com revoked" })).toBeVisible();
  // The link banner was the last action's; it is gone with this one.
  await expect(page.getByTestId("invite-link")).toHaveCount(0);
  await expect(page.getByTestId("invitation").filter({ hasText: "cy@example.com" })).toHaveCount(0);
  expect(await linkWorks(browser, second)).toBe(false);

  // Bo joins through his link and makes a key he uses once.
  const boContext = await browser.newContext();
  const bo = await boContext.newPage();
  await bo.goto(boLink);
  await signUp(bo, "Bo", "bo@example.com");
  await expect(bo.getByText("Isolated desktops in Crew")).toBeVisible();
  await bo.goto(`${server.base}/keys`);
  await bo.getByLabel("Name", { exact: true }).fill("bo-robot");
  await bo.getByRole("button", { name: "Create key" }).click();
  boKey = (await bo.getByTestId("new-key").textContent())!.trim();
  expect((await fetch(`${server.base}/v1/boxes`, { headers: { authorization: `Bearer ${boKey}` } })).status).toBe(200);
  await boContext.close();
});

test("members: last seen and keys per person; a refused role change shows the real role; banners do not go stale", async ({ page }, info) => {
  refuseNativeDialogs(page);
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("link", { name: "Members" }).click();

  const adaRow = memberRow(page, "ada@example.com");
  const boRow = memberRow(page, "bo@example.com");
  // Last seen: within the minute it is kept to (a slow run may make it a minute or two).
  const recent = /^(just now|\d+m ago)$/;
  await expect(adaRow.getByRole("cell").nth(2)).toHaveText(recent);
  await expect(boRow.getByRole("cell").nth(2)).toHaveText(recent);
  // Ada's keys: agent-1, never used (agent-2 was revoked); Bo's: bo-robot, used by now.
  await expect(adaRow).toContainText("agent-1 never used");
  await expect(adaRow).toContainText("1 revoked or expired");
  await expect(boRow).toContainText(/bo-robot used (just now|\d+m ago)/);
  await expect(boRow).not.toContainText("agent-1");

  // The only owner cannot step down: refused, and the select shows "owner" again.
  await roleSelect(page, "ada@example.com").selectOption("member");
  await page.getByRole("button", { name: "Save the role of ada@example.com" }).click();
  const refusal = page.getByRole("alert").filter({ hasText: "The role was not changed: a workspace keeps at least one owner." });
  await expect(refusal).toBeVisible();
  await expect(roleSelect(page, "ada@example.com")).toHaveValue("owner");
  await attachShot(page, info, "members: refused role change, select back on owner", { fullPage: true });

  // The next action's answer replaces the refusal.
  await roleSelect(page, "bo@example.com").selectOption("member");
  await page.getByRole("button", { name: "Save the role of bo@example.com" }).click();
  const changed = page.getByRole("status").filter({ hasText: "Role changed." });
  await expect(changed).toBeVisible();
  await expect(refusal).toHaveCount(0);
  await expect(roleSelect(page, "bo@example.com")).toHaveValue("member");
  // A plain "done" goes by itself.
  await expect(changed).toHaveCount(0, { timeout: 15_000 });

  // Dismissed by hand.
  await roleSelect(page, "bo@example.com").selectOption("viewer");
  await page.getByRole("button", { name: "Save the role of bo@example.com" }).click();
  await expect(changed).toBeVisible();
  await changed.getByRole("button", { name: "Dismiss" }).click();
  await expect(changed).toHaveCount(0);

  // Gone once the page is left, not waiting for the person to come back.
  await roleSelect(page, "bo@example.com").selectOption("member");
  await page.getByRole("button", { name: "Save the role of bo@example.com" }).click();
  await expect(changed).toBeVisible();
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("link", { name: "Members" }).click();
  await expect(roleSelect(page, "bo@example.com")).toHaveValue("member");
  await expect(changed).toHaveCount(0);

  // Nothing scrolls sideways on a phone.
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await attachShot(page, info, "members at 390 px", { fullPage: true });
  await page.goto(`${server.base}/keys`);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
});

test("the trace names the person who took the screen and gave it back", async ({ page }, info) => {
  refuseNativeDialogs(page);
  const box = await json(
    await fetch(`${server.base}/v1/boxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${adaKey}`, "content-type": "application/json" },
      body: JSON.stringify({ spec: { desktop: { features: [] } } }),
    }),
  );
  expect(box.state, JSON.stringify(box)).toBe("ready");
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();

  await page.goto(`${server.base}/boxes/${box.id}`);
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");

  await page.goto(`${server.base}/boxes/${box.id}/trace`);
  const rows = page.getByTestId("trace-entry");
  await expect(rows.filter({ hasText: "created" }).first()).toContainText("by key agent-1");
  await expect(rows.filter({ hasText: "Ada took over screen 0" })).toHaveCount(1);
  await expect(rows.filter({ hasText: "Ada gave screen 0 back" })).toHaveCount(1);
  await attachShot(page, info, "trace: Ada took over and gave back");

  await fetch(`${server.base}/v1/boxes/${box.id}`, { method: "DELETE", headers: { authorization: `Bearer ${adaKey}`, "x-holm-confirm-delete": "true" } });
});
