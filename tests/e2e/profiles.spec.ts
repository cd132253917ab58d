import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { expectCleanOnPhone } from "../support/phone-check";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";

// The Profiles page as a member uses it: the workspace's browser profiles, which box holds each,
// how big each is (one over HOLM_PROFILE_MAX_BYTES, 2 GiB by default, says so), and removing a
// free one after an in-page confirm. The rows are written into the server's store,
// as boxes launched with `placement.profile` would leave them (tests/integration/profiles.test.ts
// launches real boxes with profiles); the one "held" is held by a box row written the same way.

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

test.afterAll(async () => {
  await server?.stop();
});

test("a member sees the workspace's browser profiles and removes a free one", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "Profiles" }).click();
  await expect(page.getByRole("heading", { name: "Browser profiles for Crew" })).toBeVisible();
  await expect(page.getByText("No profiles yet")).toBeVisible();

  const db = openStore(server);
  const { id: owner } = db.prepare("select id from workspace where name = 'Crew'").get() as { id: string };
  const now = Date.now();
  const add = db.prepare("insert into browser_profile (owner, name, runtime, volume, holder, created_at_ms, last_used_ms) values (?, ?, 'docker', ?, ?, ?, ?)");
  add.run(owner, "work", "holm-profile-e2e-work", null, now - 86_400_000, now - 3_600_000);
  add.run(owner, "shop", "holm-profile-e2e-shop", "box_e2e_holder", now - 86_400_000, now);
  // Sizes as measured when a box let a profile go (null: not yet).
  add.run(owner, "huge", "holm-profile-e2e-huge", null, now - 86_400_000, now - 60_000);
  const size = db.prepare("update browser_profile set size_bytes = ? where owner = ? and name = ?");
  size.run(3_565_158, owner, "work");
  size.run(3 * 1024 ** 3, owner, "huge");
  // Another workspace's profile is not shown.
  add.run("ws_someone_else", "theirs", "holm-profile-e2e-theirs", null, now, now);
  // The holder: a live box row (only its state matters to the page).
  db.prepare(
    "insert into box (id, owner, runtime, spec_digest, spec_json, placement_json, state, screens, width, height, persistent, created_at_ms, expires_at_ms, last_used_ms) values (?, ?, 'docker', 'x', '{}', ?, 'ready', 1, 1280, 800, 0, ?, ?, ?)",
  ).run("box_e2e_holder", owner, '{"profile":"shop"}', now, now + 3_600_000, now);
  db.close();

  await page.reload();
  const table = page.getByRole("table", { name: "Browser profiles" });
  await expect(table.getByRole("row")).toHaveCount(4);
  await expect(table.getByRole("row", { name: /work/ })).toContainText("free");
  await expect(table.getByRole("row", { name: /work/ })).toContainText("3.4 MiB");
  await expect(table.getByRole("row", { name: /shop/ })).toContainText("not measured yet");
  await expect(table.getByRole("row", { name: /huge/ })).toContainText("3.0 GiB: over the 2.0 GiB limit; remove it to launch with it again");
  // No volume on the engine for it (as after a restore: backups hold rows, not volumes).
  await expect(table.getByRole("row", { name: /work/ })).toContainText("no saved data: its next box starts logged out");
  await expect(table.getByRole("row", { name: /shop/ }).getByRole("link", { name: "box_e2e_holder" })).toBeVisible();
  await expect(table.getByRole("row", { name: /shop/ })).toContainText("in use");
  await expect(page.getByRole("button", { name: "Remove profile shop" })).toHaveCount(0);
  await expect(page.getByText("theirs")).toHaveCount(0);

  // No serious axe violation, light or dark, and no sideways scroll on a 390 px phone.
  await expectCleanOnPhone(page, `${server.base}/profiles`, (phone) => expect(phone.getByRole("table", { name: "Browser profiles" })).toBeVisible());

  // Remove asks in the page first; the free profile goes, the held one stays.
  await page.getByRole("button", { name: "Remove profile work" }).click();
  await page.getByRole("button", { name: "Remove profile", exact: true }).click();
  // Its row gone, the answer has the focus, not the page's body.
  await expect(page.getByRole("status").filter({ hasText: "Profile “work” removed" })).toBeFocused();
  await expect(table.getByRole("row")).toHaveCount(3);
  await expect(table.getByRole("row", { name: /shop/ })).toBeVisible();
});

test("a member made a viewer while the page is open is told why Remove is refused, and then is not offered it", async ({ browser }) => {
  // A server of its own: the first person to sign up owns it.
  const server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const cyContext = await browser.newContext();
  const cy = await cyContext.newPage();
  await cy.goto(`${server.base}/signup`);
  await signUp(cy, "Cy", "cy@example.com", "Lab");
  await cy.getByRole("link", { name: "Members" }).click();
  await cy.getByLabel("Email").fill("dee@example.com");
  await cy.getByLabel("Role", { exact: true }).selectOption("member");
  await cy.getByRole("button", { name: "Create invitation" }).click();
  const invite = (await cy.getByTestId("invite-link").textContent())!.trim();

  const db = openStore(server);
  const { id: owner } = db.prepare("select id from workspace where name = 'Lab'").get() as { id: string };
  db.prepare("insert into browser_profile (owner, name, runtime, volume, holder, created_at_ms, last_used_ms) values (?, 'lab', 'docker', 'holm-profile-e2e-lab', null, ?, ?)").run(owner, Date.now(), Date.now());
  db.close();

  const deeContext = await browser.newContext();
  const dee = await deeContext.newPage();
  await dee.goto(invite);
  await signUp(dee, "Dee", "dee@example.com");
  await expect(dee.getByText("Isolated desktops in Lab")).toBeVisible();
  await dee.goto(`${server.base}/profiles`);
  await expect(dee.getByRole("button", { name: "Remove profile lab" })).toBeVisible();

  await cy.goto(`${server.base}/members`);
  await cy.getByRole("combobox", { name: "Role of dee@example.com", exact: true }).selectOption("viewer");
  await cy.getByRole("button", { name: "Save the role of dee@example.com" }).click();
  await expect(cy.getByRole("status").filter({ hasText: "Role changed." })).toBeVisible();

  // Dee's page was drawn for a member: the form is refused with the reason, as /v1 says it.
  await dee.getByRole("button", { name: "Remove profile lab" }).click();
  await dee.getByRole("button", { name: "Remove profile", exact: true }).click();
  await expect(dee.getByRole("alert")).toContainText("this needs the member role");
  await expect(dee.getByRole("table", { name: "Browser profiles" }).getByRole("row", { name: /lab/ })).toBeVisible();
  await dee.reload();
  await expect(dee.getByRole("table", { name: "Browser profiles" }).getByRole("row", { name: /lab/ })).toBeVisible();
  await expect(dee.getByRole("button", { name: "Remove profile lab" })).toHaveCount(0);
  // The same form posted without the page's script (a document POST) answers the page with the reason.
  const posted = await dee.evaluate(async () => {
    const form = new FormData();
    form.set("csrf", (document.querySelector("input[name=csrf]") as HTMLInputElement).value);
    form.set("intent", "delete");
    form.set("name", "lab");
    const res = await fetch("/profiles", { method: "POST", body: form });
    return { status: res.status, body: await res.text() };
  });
  expect(posted.status).toBe(400);
  expect(posted.body).toMatch(/role="alert"[^>]*>.*this needs the member role in Lab; you are a viewer/s);
  await cyContext.close();
  await deeContext.close();
  await server.stop();
});
