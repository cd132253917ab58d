import { type Page, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// One person in several workspaces, with the console open in several tabs: a page's forms act in
// the workspace the page shows, whatever another tab picked since (keys, members, secrets, a box
// list's row buttons and pictures); a box page opens for a box of
// any of your workspaces. A member whose role changes (or who is removed) while on a box page is
// told, and its controls go (on its pop-out screen too). An invitation for someone already a member is refused, and a link
// such a person opens says so. A path that does not decode, or names no box of hers, gets the console's own
// not-found page, inside its frame.

let server: TestServer;
serverForSpec((s) => (server = s));

test.describe.configure({ mode: "serial" });

let crewKey = "";
let boxId = "";
let boLink = "";

async function logIn(page: Page, email: string) {
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
}

async function switchTo(page: Page, name: string) {
  await page.getByRole("button", { name: /^Workspace: / }).click();
  await page.getByRole("list", { name: "Your workspaces" }).getByRole("button", { name: `${name} (owner)`, exact: true }).click();
  await expect(page.getByRole("button", { name: `Workspace: ${name}`, exact: true })).toBeVisible();
  await page.waitForLoadState("networkidle");
}

test("forms act in the workspace their page shows, whatever another tab switched to", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  await page.goto(server.base);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  // A second workspace of hers; then back to Crew.
  await page.goto(`${server.base}/workspaces/new`);
  await page.getByLabel("Workspace name").fill("Research");
  await page.getByRole("button", { name: "Create workspace" }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await switchTo(page, "Crew");

  // Tab 1 on the keys, tab 3 on the members, both of Crew; tab 2 then picks Research.
  const tab1 = page;
  await tab1.goto(`${server.base}/keys`);
  await expect(tab1.getByRole("heading", { name: "API keys for Crew" })).toBeVisible();
  const tab3 = await context.newPage();
  refuseNativeDialogs(tab3);
  await tab3.goto(`${server.base}/members`);
  await expect(tab3.getByRole("heading", { name: "Members of Crew" })).toBeVisible();
  const tab4 = await context.newPage();
  refuseNativeDialogs(tab4);
  await tab4.goto(`${server.base}/settings`);
  await expect(tab4.getByRole("heading", { name: "Secrets of Crew" })).toBeVisible();
  const tab2 = await context.newPage();
  await tab2.goto(server.base);
  await switchTo(tab2, "Research");

  // Tab 1's key is Crew's: the page stays Crew's and lists it.
  await tab1.getByLabel("Name", { exact: true }).fill("meant-for-tab1");
  await tab1.getByRole("button", { name: "Create key" }).click();
  crewKey = (await tab1.getByTestId("new-key").textContent())!.trim();
  await expect(tab1.getByRole("heading", { name: "API keys for Crew" })).toBeVisible();
  await expect(tab1.getByRole("row").filter({ hasText: "meant-for-tab1" })).toHaveCount(1);
  await attachShot(tab1, info, "tab 1: the key made in Crew, the page still Crew's");
  // The key acts as Crew: a box made with it is Crew's.
  const box = await json(
    await fetch(`${server.base}/v1/boxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${crewKey}`, "content-type": "application/json" },
      body: JSON.stringify({ spec: { desktop: { features: [] } } }),
    }),
  );
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;

  // Tab 3 invites to Crew; the link says so.
  await tab3.getByLabel("Email").fill("cy@example.com");
  await tab3.getByLabel("Role", { exact: true }).selectOption("admin");
  await tab3.getByRole("button", { name: "Create invitation" }).click();
  const link = (await tab3.getByTestId("invite-link").textContent())!.trim();
  await expect(tab3.getByRole("heading", { name: "Members of Crew" })).toBeVisible();
  const stranger = await page.context().browser()!.newContext();
  const cy = await stranger.newPage();
  await cy.goto(link);
  await expect(cy.getByText("You are invited to Crew as admin")).toBeVisible();
  await stranger.close();

  // Tab 4's secret is Crew's; Research's secret of the same name is not the one it deletes.
  // (Tab 1's and tab 3's forms made Crew current again: tab 2, drawn afresh, picks Research once more.)
  await tab2.reload();
  await switchTo(tab2, "Research");
  await tab2.goto(`${server.base}/keys`);
  await expect(tab2.getByRole("heading", { name: "API keys for Research" })).toBeVisible();
  await tab4.getByLabel("Name", { exact: true }).fill("PROD_DB_PASSWORD");
  await tab4.getByLabel("Value", { exact: true }).fill("crew-value");
  await tab4.getByRole("button", { name: "Save secret" }).click();
  await expect(tab4.getByText("Secret “PROD_DB_PASSWORD” saved.")).toBeVisible();
  await expect(tab4.getByRole("heading", { name: "Secrets of Crew" })).toBeVisible();
  await expect(tab4.getByRole("cell", { name: "PROD_DB_PASSWORD", exact: true })).toBeVisible();
  await tab2.goto(`${server.base}/settings`);
  await switchTo(tab2, "Research");
  await expect(tab2.getByRole("heading", { name: "Secrets of Research" })).toBeVisible();
  await expect(tab2.getByText("No secrets yet.")).toBeVisible();
  await tab2.getByLabel("Name", { exact: true }).fill("PROD_DB_PASSWORD");
  await tab2.getByLabel("Value", { exact: true }).fill("research-value");
  await tab2.getByRole("button", { name: "Save secret" }).click();
  await expect(tab2.getByText("Secret “PROD_DB_PASSWORD” saved.")).toBeVisible();
  await tab4.getByRole("button", { name: "Delete PROD_DB_PASSWORD" }).click();
  await tab4.getByRole("dialog").getByRole("button", { name: "Delete secret" }).click();
  await expect(tab4.getByText("Secret “PROD_DB_PASSWORD” deleted.")).toBeVisible();
  await expect(tab4.getByRole("heading", { name: "Secrets of Crew" })).toBeVisible();
  await expect(tab4.getByText("No secrets yet.")).toBeVisible();
  await tab2.reload();
  await switchTo(tab2, "Research");
  await expect(tab2.getByRole("heading", { name: "Secrets of Research" })).toBeVisible();
  await expect(tab2.getByRole("cell", { name: "PROD_DB_PASSWORD", exact: true })).toBeVisible();
  await attachShot(tab4, info, "tab 4: Crew's secret saved and deleted while Research was current");

  // Research has no such key.
  await tab2.goto(`${server.base}/keys`);
  await switchTo(tab2, "Research");
  await expect(tab2.getByRole("heading", { name: "API keys for Research" })).toBeVisible();
  await expect(tab2.getByText("No keys yet.")).toBeVisible();
});

test("a box page of another of your workspaces opens, and its buttons act on the box", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  await logIn(page, "ada@example.com");
  await switchTo(page, "Crew");
  await page.goto(`${server.base}/boxes/${boxId}`);
  await expect(page.getByRole("button", { name: "Take over" })).toBeVisible();
  // Another tab picks Research; Take over in the first still works.
  const other = await context.newPage();
  await other.goto(server.base);
  await switchTo(other, "Research");
  await page.getByRole("button", { name: "Take over" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("You have control");
  await page.getByRole("button", { name: "Give back" }).click();
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  // A link to the box, opened while Research is current (a reload, a shared link), opens it.
  await switchTo(other, "Research");
  await other.goto(`${server.base}/boxes/${boxId}`);
  await expect(other.getByRole("button", { name: "Take over" })).toBeVisible();
  await expect(other.getByText("There is no page at this address")).toHaveCount(0);
  await other.goto(`${server.base}/boxes/${boxId}/trace`);
  await expect(other.getByTestId("trace-entry").first()).toBeVisible();
  await attachShot(other, info, "Crew's trace opened while Research is current");
});

test("a box list left open acts on its own rows, and keeps asking for their pictures, after another tab switches", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  await logIn(page, "ada@example.com");
  await switchTo(page, "Crew");
  const row = page.locator(`[data-box-id="${boxId}"]`);
  await expect(row).toContainText("ready");
  const other = await context.newPage();
  await other.goto(server.base);
  await switchTo(other, "Research");
  // The list's next round about its pictures is about Crew's boxes, this one among them.
  const round = await page.waitForResponse((r) => r.url().includes("/boxes/thumbs?"), { timeout: 15_000 });
  expect(round.status()).toBe(200);
  expect(Object.keys((await round.json()).thumbs)).toContain(boxId);
  await page.getByRole("button", { name: `Pause ${boxId}` }).click();
  await expect(row).toContainText("paused");
  await expect(page.getByText("no such box")).toHaveCount(0);
  await attachShot(page, info, "the stale list paused its own box");
  await switchTo(other, "Research");
  await page.getByRole("button", { name: `Resume ${boxId}` }).click();
  await expect(row).toContainText("ready", { timeout: 60_000 });
});

test("an invitation for a member is refused, and a member opening a link is told", async ({ page, browser }) => {
  refuseNativeDialogs(page);
  await logIn(page, "ada@example.com");
  await switchTo(page, "Crew");
  await page.goto(`${server.base}/members`);
  const invite = async (email: string, role: string) => {
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Role", { exact: true }).selectOption(role);
    await page.getByRole("button", { name: "Create invitation" }).click();
  };
  await invite("ada@example.com", "viewer");
  await expect(page.getByRole("alert").filter({ hasText: "ada@example.com is already a member of Crew (owner); change their role instead" })).toBeVisible();
  await expect(page.getByTestId("invite-link")).toHaveCount(0);

  // Two links for Bo; he joins through one, then opens the other.
  await invite("bo@example.com", "member");
  boLink = (await page.getByTestId("invite-link").textContent())!.trim();
  await invite("bo@example.com", "admin");
  await expect(page.getByTestId("invite-link")).not.toHaveText(boLink);
  const second = (await page.getByTestId("invite-link").textContent())!.trim();
  const boContext = await browser.newContext();
  const bo = await boContext.newPage();
  await bo.goto(boLink);
  await signUp(bo, "Bo", "bo@example.com");
  await expect(bo.getByText("Isolated desktops in Crew")).toBeVisible();
  await bo.goto(second);
  await expect(bo.getByText("You are already a member of Crew (member)")).toBeVisible();
  await expect(bo.getByRole("button", { name: "Join workspace" })).toHaveCount(0);
  await boContext.close();
  // And now that he is a member, inviting him again is refused.
  await invite("bo@example.com", "admin");
  await expect(page.getByRole("alert").filter({ hasText: "bo@example.com is already a member of Crew (member)" })).toBeVisible();
});

test("a member on a box page is told when made a viewer, and when removed", async ({ page, browser }, info) => {
  refuseNativeDialogs(page);
  const boContext = await browser.newContext();
  const bo = await boContext.newPage();
  await logIn(bo, "bo@example.com");
  await bo.goto(`${server.base}/boxes/${boxId}`);
  await bo.getByRole("button", { name: "Take over" }).click();
  await expect(bo.getByTestId("control-banner")).toContainText("You have control");
  const boScreen = await boContext.newPage();
  await boScreen.goto(`${server.base}/boxes/${boxId}/screen`);
  await expect(boScreen.getByTestId("control-banner")).toContainText("You have control");
  // The pop-out is a page of its own to a screen reader: a main landmark with a heading.
  await expect(boScreen.getByRole("main").getByRole("heading", { level: 1, name: /^Screen 0 of / })).toHaveCount(1);

  await logIn(page, "ada@example.com");
  await switchTo(page, "Crew");
  await page.goto(`${server.base}/members`);
  await page.getByRole("combobox", { name: "Role of bo@example.com", exact: true }).selectOption("viewer");
  await page.getByRole("button", { name: "Save the role of bo@example.com" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Role changed." })).toBeVisible();

  await expect(bo.getByText("Your role in Crew is now viewer")).toBeVisible();
  await expect(bo.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await attachShot(bo, info, "Bo told he is a viewer now");
  // The pop-out, where he held control, tells him why it went, too.
  await expect(boScreen.getByRole("status").filter({ hasText: "Your role in Crew is now viewer." })).toBeVisible();
  await expect(boScreen.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await attachShot(boScreen, info, "Bo's pop-out told he is a viewer now");

  await page.getByRole("button", { name: "Remove bo@example.com" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove member" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Member removed." })).toBeVisible();
  await expect(bo.getByText("You are no longer a member of Crew")).toBeVisible();
  await expect(bo.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await expect(bo.getByText("View only")).toHaveCount(0);
  await attachShot(bo, info, "Bo told he is no longer a member");
  // The popped-out screen says so too, not "connecting…" for good.
  await expect(boScreen.getByText("You are no longer a member of Crew")).toBeVisible();
  await attachShot(boScreen, info, "Bo's pop-out screen told he is no longer a member");
  await boContext.close();
  await fetch(`${server.base}/v1/boxes/${boxId}`, { method: "DELETE", headers: { authorization: `Bearer ${crewKey}`, "x-holm-confirm-delete": "true" } });
});

test("a box path that does not decode gets the console's not-found page", async ({ page }) => {
  await logIn(page, "ada@example.com");
  const res = await page.goto(`${server.base}/boxes/%zz`);
  expect([400, 404]).toContain(res!.status());
  await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
  await expect(page.getByRole("link", { name: "Back to boxes" })).toBeVisible();
  // Signed out, the same path leads to the log-in page, which comes back to it.
  await page.context().clearCookies();
  await page.goto(`${server.base}/boxes/%zz`);
  await expect(page.getByRole("button", { name: "Log in" })).toBeVisible();
});

test("a link to a box that is not there says so inside the console, header and all", async ({ page }) => {
  await logIn(page, "ada@example.com");
  for (const path of ["/boxes/box_00000000000000000000000000000000", "/boxes/box_00000000000000000000000000000000/trace", "/boxes/box_00000000000000000000000000000000/screen"]) {
    const res = await page.goto(`${server.base}${path}`);
    expect(res!.status(), path).toBe(404);
    await expect(page.getByRole("heading", { name: "Not found", level: 1 })).toBeVisible();
    await expect(page.getByText('There is no box box_00000000000000000000000000000000 in your workspaces.')).toBeVisible();
    // Still in the console: its navigation and workspace switcher, one click from anywhere.
    await expect(page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Keys" })).toBeVisible();
    await expect(page.getByRole("button", { name: /^Workspace: / })).toBeVisible();
  }
  // An address made to put words in the console's mouth is not repeated (it is no box id).
  await page.goto(`${server.base}/boxes/${encodeURIComponent("box_x Your account is locked: call 555-0100 now")}`);
  await expect(page.getByText("There is no box at this address.")).toBeVisible();
  await expect(page.getByText(/555-0100/)).toHaveCount(0);
});
