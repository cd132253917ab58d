import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { expectCleanOnPhone } from "../support/phone-check";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";

// The Images page (seed 000 "Runtimes and images", ADR 0017) as the server's administrator uses
// it: "Build image" with no spec finds the default image already built (nothing is built here:
// the suites' boxes need it anyway), and the page lists it. A build under way is a row the test
// writes into the store (no real build): its progress bar and step show, the page reads itself
// again every second while it builds and so shows it failed, with its reason, once the row says
// so; then the administrator removes that row's image (and two more in a row, each answer taking
// the focus). A build asked for while the row says it is under way joins it, announced once, and
// a failure said twice is heard twice. No real image is ever built or removed.

let server: TestServer;
const FAKE = `e2e${Date.now().toString(16).padStart(13, "0")}`.slice(0, 16);

test.beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
});

test.afterAll(async () => {
  await server?.stop();
});

function store() {
  const db = openStore(server);
  db.pragma("busy_timeout = 5000");
  return db;
}

test("the images page lists the built default image, shows a build's progress live, and lets the administrator remove an image", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "Images" }).click();
  await expect(page.getByRole("heading", { name: "Images", exact: true })).toBeVisible();
  await expect(page.getByText("No images yet")).toBeVisible();

  // A spec that is not JSON: the field says so, marked invalid and described by the message.
  const spec = page.getByRole("textbox", { name: /^Box spec/ });
  await spec.fill("{not json");
  await page.getByRole("button", { name: "Build image" }).click();
  await expect(page.getByRole("alert")).toHaveText("the spec is not valid JSON");
  await expect(spec).toHaveAttribute("aria-invalid", "true");
  await expect(spec).toHaveAccessibleDescription("the spec is not valid JSON");
  await spec.fill("");

  await page.getByRole("button", { name: "Build image" }).click();
  await expect(page.getByText(/is built already/)).toBeVisible();
  await expect(spec).not.toHaveAttribute("aria-invalid", "true");
  const runtime = page.getByRole("heading", { name: "Runtime docker" });
  await expect(runtime).toBeVisible();
  const built = page.getByRole("listitem", { name: /^Image holm-x11:[0-9a-f]{16}$/ });
  await expect(built).toHaveCount(1);
  await expect(built).toContainText("built");

  // A build under way, as a queued build's row is before the job takes it.
  const db = store();
  db.prepare("insert into image (runtime, digest, image, state, reason, request_json, spec_digest, owner, created_at_ms, built_at_ms) values ('docker', ?, ?, 'building', null, ?, null, null, ?, null)").run(
    FAKE,
    `holm-x11:${FAKE}`,
    JSON.stringify({ features: [], packages: ["gimp"] }),
    Date.now(),
  );
  db.close();
  await page.reload();
  const fake = page.getByRole("listitem", { name: `Image holm-x11:${FAKE}` });
  await expect(fake).toContainText("building");
  await expect(page.getByRole("progressbar", { name: `Building holm-x11:${FAKE}` })).toBeVisible();
  await expect(fake.getByTestId("build-step")).toHaveText("preparing the build");
  await expect(fake.getByRole("button", { name: /^Remove/ })).toHaveCount(0);

  // Like every console page: no serious axe violation, light or dark, and no sideways scrolling
  // on a 390 px phone, with a build under way on it.
  await expectCleanOnPhone(page, `${server.base}/images`, (phone) => expect(phone.getByRole("progressbar")).toBeVisible());

  // The page follows the build without a reload: here it ends failed, and a screen reader hears it
  // from a live region that was there (empty) before.
  const news = page.getByRole("status").and(page.getByTestId("build-news"));
  await expect(news).toHaveText("");
  const db2 = store();
  db2.prepare("update image set state = 'failed', reason = 'E: Unable to locate package gimp' where digest = ?").run(FAKE);
  db2.close();
  await expect(fake).toContainText("failed");
  await expect(fake).toContainText("E: Unable to locate package gimp");
  await expect(page.getByRole("progressbar")).toHaveCount(0);
  await expect(news).toHaveText(`The build of holm-x11:${FAKE} failed: E: Unable to locate package gimp`);

  // Removing asks in the page first; only that image goes.
  // The dialog says what the server does: it refuses while a box uses the image.
  await fake.getByRole("button", { name: `Remove holm-x11:${FAKE}` }).click();
  const ask = page.getByRole("dialog", { name: `Remove the image holm-x11:${FAKE}?` });
  await expect(ask).toContainText("It is refused while a box uses it: remove that box first. A box that needs it later builds it again.");
  await ask.getByRole("button", { name: "Remove image" }).click();
  // The row that had the focus is gone: the answer has it now, not the page's body.
  const removed = page.getByRole("status").filter({ hasText: `Image holm-x11:${FAKE} removed.` });
  await expect(removed).toBeVisible();
  await expect(removed).toBeFocused();
  await expect(fake).toHaveCount(0);
  await expect(built).toHaveCount(1);

  // Two removals in a row, the first one's answer still shown: each answer takes the focus.
  const others = [`${FAKE.slice(0, 15)}2`, `${FAKE.slice(0, 15)}3`];
  const db3 = store();
  for (const digest of others) {
    db3.prepare("insert into image (runtime, digest, image, state, reason, request_json, spec_digest, owner, created_at_ms, built_at_ms) values ('docker', ?, ?, 'failed', 'E: no', ?, null, null, ?, null)").run(
      digest,
      `holm-x11:${digest}`,
      JSON.stringify({ features: [], packages: ["gimp"] }),
      Date.now(),
    );
  }
  db3.close();
  await page.reload();
  for (const digest of others) {
    await page.getByRole("button", { name: `Remove holm-x11:${digest}` }).click();
    await page.getByRole("dialog", { name: `Remove the image holm-x11:${digest}?` }).getByRole("button", { name: "Remove image" }).click();
    const said = page.getByRole("status").filter({ hasText: `Image holm-x11:${digest} removed.` });
    await expect(said).toBeVisible();
    await expect(said).toBeFocused();
  }

  // "Build image" for an image whose build is under way joins it (no real build here): the banner
  // says "Building image …", and the live region does not say it a second time. Two builds that
  // fail the same way are both heard: the region empties before it says the same sentence again.
  await page.evaluate(() => {
    const el = document.querySelector('[data-testid="build-news"]')!;
    const said: string[] = ((window as unknown as { said: string[] }).said = []);
    new MutationObserver(() => said.push(el.textContent ?? "")).observe(el, { childList: true, characterData: true, subtree: true });
  });
  const digest = (await built.getAttribute("aria-label"))!.replace(/^Image holm-x11:/, "");
  const failedAgain = `The build of holm-x11:${digest} failed: E: disk full`;
  for (const round of [1, 2]) {
    const db4 = store();
    db4.prepare("update image set state = 'building', built_at_ms = null where digest = ?").run(digest);
    db4.close();
    await spec.fill("");
    await page.getByRole("button", { name: "Build image" }).click();
    await expect(page.getByRole("status").filter({ hasText: `Building image ${digest}.` })).toBeVisible();
    await expect(built).toContainText("building");
    const db5 = store();
    db5.prepare("update image set state = 'failed', reason = 'E: disk full' where digest = ?").run(digest);
    db5.close();
    await expect(built).toContainText("failed");
    const heard = async () => (await page.evaluate(() => (window as unknown as { said: string[] }).said)).filter((t) => t === failedAgain).length;
    await expect.poll(heard, { message: `round ${round}` }).toBe(round);
    await expect(news).toHaveText(failedAgain);
  }
  const said = await page.evaluate(() => (window as unknown as { said: string[] }).said);
  expect(said.filter((t) => t.includes("Building"))).toEqual([]);
  expect(said.filter((t) => t === failedAgain)).toHaveLength(2);
  const db6 = store();
  db6.prepare("update image set state = 'built', reason = null, built_at_ms = ? where digest = ?").run(Date.now(), digest);
  db6.close();
});
