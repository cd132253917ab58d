import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, startServer } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// The console's small courtesies, as a person meets them: the launch form explains itself, the
// "Launching …" banner belongs to that launch only and the form empties after it, and removing a
// box is asked in the page, by the box's name, never with the browser's confirm().

let server: TestServer;
serverForSpec((s) => (server = s));

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
  // The Launch button keeps the focus through the launch (not dropped on the page's body).
  await expect(form.getByRole("button", { name: "Launch box" })).toBeFocused();
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

// Its own server: sign-up is for the first person of a server only.
test.describe("named boxes", () => {
  let named: TestServer;
  test.beforeAll(async () => {
    named = await startServer();
  });
  test.afterAll(async () => {
    await named?.stop();
  });

  test("a box's page and trace name it, show its labels, and rename it in place", async ({
    page,
  }, info) => {
    refuseNativeDialogs(page);
    await page.goto(`${named.base}/signup`);
    await signUp(page, "Ada", "ada@example.com", "Names");
    const form = page.getByRole("form", { name: "Launch a box" });
    await form.getByLabel("Name (optional)").fill("checkout flow");
    await form.getByLabel("Labels (optional)").fill("team=web");
    await form.getByRole("button", { name: "Launch box" }).click();
    const row = page.getByRole("row").filter({ hasText: "checkout flow" });
    await expect(row.getByText("ready", { exact: true })).toBeVisible({
      timeout: 120_000,
    });
    const id = (await row.getByText(/^box_/).first().textContent())!.replace(
      /[….·\s].*$/,
      "",
    );

    // The page is the box's by its name; its id is still there to read and copy.
    await row.getByRole("link", { name: "checkout flow", exact: true }).click();
    await expect(
      page.getByRole("heading", { level: 1, name: /checkout flow/ }),
    ).toBeVisible();
    await expect(page).toHaveTitle("checkout flow · holm");
    const boxUrl = page.url();
    await expect(
      page.getByRole("navigation", { name: "Breadcrumb" }),
    ).toContainText("Boxes / checkout flow");
    await expect(
      page.getByText(new RegExp(`^${id}[0-9a-f]*$`)).first(),
    ).toBeVisible();
    await attachShot(page, info, "box page named");

    // Renamed here, it is renamed everywhere: this heading, the title, the list.
    await page.getByRole("button", { name: "Rename checkout flow" }).click();
    const name = page.getByRole("textbox", { name: /^Name of box_/ });
    await expect(name).toHaveValue("checkout flow");
    await name.fill("checkout v2");
    await page.getByRole("button", { name: "Save" }).click();
    await expect(
      page.getByRole("heading", { level: 1, name: /checkout v2/ }),
    ).toBeVisible();
    await expect(page).toHaveTitle("checkout v2 · holm");

    // The trace names it too.
    await page.getByRole("link", { name: /Trace: what happened/ }).click();
    await expect(
      page.getByRole("heading", { name: "Trace of checkout v2" }),
    ).toBeVisible();
    await expect(page).toHaveTitle("Trace of checkout v2 · holm");
    await page
      .getByRole("navigation", { name: "Breadcrumb" })
      .getByRole("link", { name: "checkout v2" })
      .click();

    // A label chip opens the list filtered by it.
    await page.getByRole("link", { name: "team=web" }).click();
    await expect(page).toHaveURL(/\/\?label=team(%3D|=)web$/);
    await expect(
      page.getByRole("heading", { name: "Boxes", exact: true }),
    ).toBeVisible();
    await expect(
      page.getByRole("row").filter({ hasText: "checkout v2" }),
    ).toBeVisible();
    await expect(
      page.getByRole("row").filter({ hasText: "checkout flow" }),
    ).toHaveCount(0);

    // A box page open elsewhere follows a rename made in the list, live.
    const other = await page.context().newPage();
    await other.goto(boxUrl);
    await expect(other.getByRole("heading", { level: 1, name: /checkout v2/ })).toBeVisible();
    await page.getByRole("button", { name: "Rename checkout v2" }).click();
    await page.getByRole("textbox", { name: /^Name of box_/ }).fill("checkout v3");
    await page.getByRole("button", { name: "Save" }).click();
    await expect(other.getByRole("heading", { level: 1, name: /checkout v3/ })).toBeVisible();
    await expect(other).toHaveTitle("checkout v3 · holm");
    await other.close();
  });
});
