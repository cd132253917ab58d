import { type Locator, type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, startServer } from "../support/server";
import { refuseNativeDialogs } from "../support/shots";

// Where the keyboard's focus goes after a console form's answer (WCAG 2.4.3, 3.3.1, 1.3.1): a
// refusal that names a field marks that field invalid, ties the message to it and puts the focus
// in it, keeping what was typed; one that names no field (a quota) puts it on the banner that
// says it; an action that removed the control that had the focus puts it on its answer's banner.
// Never on the page's body. No box is started: the workspace may have none.

let server: TestServer;

test.beforeAll(async ({ browser }) => {
  server = await startServer({ HOLM_WORKSPACE_BOXES: "0" });
  const page = await browser.newPage();
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.close();
});

test.afterAll(async () => {
  await server?.stop();
});

async function logIn(page: Page) {
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
}

/** The field is refused: marked, described by the message, focused, and still holds `value`. */
async function expectRefused(field: Locator, message: RegExp, value: string) {
  await expect(field).toHaveAttribute("aria-invalid", "true");
  await expect(field).toHaveAccessibleDescription(message);
  await expect(field).toBeFocused();
  await expect(field).toHaveValue(value);
}

/** The heading inside the element that has the focus (a card). */
const focusedHeading = (page: Page) => page.evaluate(() => document.activeElement?.querySelector("h2")?.textContent ?? null);

async function launchWith(page: Page, labels: string) {
  const form = page.getByRole("form", { name: "Launch a box" });
  const field = form.getByRole("textbox", { name: "Labels (optional)" });
  await field.fill(labels);
  await form.getByRole("button", { name: "Launch box" }).click();
  return field;
}

test("the launch form's refusals: at the labels field they name, else on the banner", async ({ page }) => {
  refuseNativeDialogs(page);
  await logIn(page);
  let field = await launchWith(page, "team web=x");
  // Said in words for the person who typed them, not with the API's field path (metadata.labels…).
  await expectRefused(field, /“team web” cannot be a label key\. A key is 1 to 63 lowercase letters/, "team web=x");
  field = await launchWith(page, "team web");
  await expectRefused(field, /Write each label as key=value, separated by commas: “team web” has no “=”\./, "team web");
  field = await launchWith(page, "=x");
  await expectRefused(field, /“=x” has no key before its “=”/, "=x");
  const long = `team=${"v".repeat(400)}`;
  field = await launchWith(page, long);
  await expectRefused(field, /The value of “team” is longer than 128 characters\./, long);

  // The quota names no field: its banner takes the focus; the labels are not marked.
  field = await launchWith(page, "team=web");
  const banner = page.getByRole("alert").filter({ hasText: "HOLM_WORKSPACE_BOXES=0" });
  await expect(banner).toBeFocused();
  await expect(field).not.toHaveAttribute("aria-invalid", "true");
  await expect(field).toHaveAccessibleDescription("key=value pairs, separated by commas, to filter the list by.");
  await expect(field).toHaveValue("team=web");
});

test("a new workspace's name refused: the name field says it and has the focus", async ({ page }) => {
  await logIn(page);
  await page.goto(`${server.base}/workspaces/new`);
  const name = page.getByRole("textbox", { name: "Workspace name" });
  await name.fill("   ");
  await page.getByRole("button", { name: "Create workspace" }).click();
  await expectRefused(name, /a workspace name is 1 to 80 characters/, "   ");
});

test("keys, invitations and webhooks: removals focus their banner, refusals their field", async ({ page }) => {
  refuseNativeDialogs(page);
  await logIn(page);

  // A key revoked: its button is gone, the banner saying so has the focus.
  await page.goto(`${server.base}/keys`);
  await page.getByLabel("Name", { exact: true }).fill("k1");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByTestId("new-key")).toBeVisible();
  // The form starts anew: its card, with the key to copy, has the focus.
  await expect.poll(() => focusedHeading(page)).toBe("Key “k1” created");
  await page.getByRole("button", { name: "Revoke k1" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Key revoked" })).toBeFocused();

  // An invitation revoked: the same.
  await page.goto(`${server.base}/members`);
  const email = page.getByRole("textbox", { name: "Email" });
  await email.fill("bo@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  await expect(page.getByRole("status").filter({ has: page.getByTestId("invite-link") })).toBeFocused();
  // A new link: the invitation's row is drawn anew; the answer takes the focus again.
  await page.getByRole("button", { name: "New link for bo@example.com" }).click();
  await expect(page.getByRole("status").filter({ hasText: "New link for bo@example.com" })).toBeFocused();
  await page.getByRole("button", { name: "Revoke the invitation for bo@example.com" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke invitation" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Invitation for bo@example.com revoked" })).toBeFocused();

  // Inviting a member: refused at the email field.
  await email.fill("ada@example.com");
  await page.getByRole("button", { name: "Create invitation" }).click();
  await expectRefused(email, /ada@example\.com is already a member/, "ada@example.com");

  // A webhook to a loopback address: refused at the URL field.
  await page.goto(`${server.base}/webhooks`);
  const url = page.getByRole("textbox", { name: "URL" });
  await url.fill("http://127.0.0.1:1/x");
  await page.getByRole("button", { name: "Add webhook" }).click();
  await expectRefused(url, /url: "127\.0\.0\.1" is a loopback address/, "http://127.0.0.1:1/x");
  // A public one is added: the form starts anew, the card with its secret has the focus.
  await url.fill("http://93.184.216.34/hook");
  await page.getByRole("button", { name: "Add webhook" }).click();
  await expect.poll(() => focusedHeading(page)).toBe("Webhook created");
});

test("log-in, sign-up and password change: refusals said where the focus is, with what was typed kept; a change empties the form", async ({ page, browser }) => {
  refuseNativeDialogs(page);
  // A wrong password: the banner saying so has the focus (the Log in button was disabled while
  // it checked, so the focus would otherwise fall to the page's body), the email is kept.
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "the email or password is not right" })).toBeFocused();
  await expect(page.getByLabel("Email")).toHaveValue("ada@example.com");

  await logIn(page);
  // Changing the password: a wrong current one is said at that field, differing new ones at the
  // confirmation; each has the focus.
  await page.goto(`${server.base}/settings`);
  const current = page.getByLabel("Current password");
  await current.fill("not the password");
  await page.getByLabel("New password", { exact: true }).fill("another horse battery");
  await page.getByLabel("Confirm new password").fill("another horse battery");
  await page.getByRole("button", { name: "Change password" }).click();
  await expectRefused(current, /the current password is not right/, "not the password");
  await current.fill("correct horse battery");
  const confirm = page.getByLabel("Confirm new password");
  await confirm.fill("another horse batterie");
  await page.getByRole("button", { name: "Change password" }).click();
  await expectRefused(confirm, /the new passwords differ/, "another horse batterie");
  // Changed: the form is empty again (no password left typed in the page) and the answer has the
  // focus; then back to the password the other tests use.
  const change = async (from: string, to: string) => {
    await current.fill(from);
    await page.getByLabel("New password", { exact: true }).fill(to);
    await confirm.fill(to);
    await page.getByRole("button", { name: "Change password" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Password changed." })).toBeFocused();
    for (const f of [current, page.getByLabel("New password", { exact: true }), confirm]) await expect(f).toHaveValue("");
  };
  await change("correct horse battery", "another horse battery");
  // Straight away, with no reload: the page's forms carry the new session's token.
  await change("another horse battery", "correct horse battery");

  // Sign-ups opened, a new person's differing passwords are said at the confirmation.
  await page.getByRole("checkbox", { name: /Anyone who reaches this server may sign up/ }).check();
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Saved." })).toBeVisible();
  const other = await browser.newPage();
  try {
    refuseNativeDialogs(other);
    await other.goto(`${server.base}/signup`);
    await other.getByLabel("Name", { exact: true }).fill("Bo");
    await other.getByLabel("Email").fill("bo-signup@example.com");
    await other.getByLabel("Password", { exact: true }).fill("correct horse battery");
    const again = other.getByLabel("Confirm password");
    await again.fill("correct horse batterie");
    await other.getByRole("button", { name: "Create account" }).click();
    await expectRefused(again, /the passwords differ/, "correct horse batterie");
    await expect(other.getByLabel("Email")).toHaveValue("bo-signup@example.com");
    // An address with an account: no field to mend, the banner has the focus.
    await other.getByLabel("Email").fill("ada@example.com");
    await again.fill("correct horse battery");
    await other.getByRole("button", { name: "Create account" }).click();
    await expect(other.getByRole("alert").filter({ hasText: "an account with this email exists" })).toBeFocused();
  } finally {
    await other.close();
    await page.getByRole("checkbox", { name: /Anyone who reaches this server may sign up/ }).uncheck();
    await page.getByRole("button", { name: "Save", exact: true }).click();
  }
});

test("secrets on Settings: a save and a delete put the focus on their answer, a refused value is said at its field", async ({ page }) => {
  refuseNativeDialogs(page);
  await logIn(page);
  await page.goto(`${server.base}/settings`);
  const secrets = page.locator("section").filter({ has: page.getByRole("heading", { name: "Secrets of Crew" }) });
  const name = secrets.getByRole("textbox", { name: "Name" });
  const value = secrets.getByLabel("Value");
  // Saved: the form is drawn afresh (what was typed leaves the page), so the Save button that had
  // the focus is gone; the answer takes it.
  await name.fill("API_TOKEN");
  await value.fill("s3cret-value");
  await secrets.getByRole("button", { name: "Save secret" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Secret “API_TOKEN” saved." })).toBeFocused();
  await expect(value).toHaveValue("");

  // A value over 64 KiB: refused at the Value field, the name still there.
  const long = "x".repeat(64 * 1024 + 1);
  await name.fill("BIG");
  await value.fill(long);
  await secrets.getByRole("button", { name: "Save secret" }).click();
  // (expectRefused's toHaveValue would print 64 KiB on a failure: the length is compared.)
  await expect(value).toHaveAttribute("aria-invalid", "true");
  await expect(value).toHaveAccessibleDescription(/a secret's value is at most 65536 characters/);
  await expect(value).toBeFocused();
  expect((await value.inputValue()).length, "the value typed is kept").toBe(long.length);
  await expect(name).toHaveValue("BIG");

  // Deleted: its row and Delete button are gone; the answer has the focus.
  await secrets.getByRole("button", { name: "Delete API_TOKEN" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete secret" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Secret “API_TOKEN” deleted." })).toBeFocused();
  await expect(secrets.getByRole("cell", { name: "API_TOKEN" })).toHaveCount(0);
});
