import { type Page, type Route, expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { type TestServer, removeTestBoxes, startServer } from "../support/server";

// The console when the browser cuts its requests. Chromium cancels every request in flight,
// loopback included, when a network interface comes or goes (net::ERR_NETWORK_CHANGED), and the
// Docker engine beside the server adds and removes them as boxes start and go: CI run 45 caught a
// box page that lost its stylesheet and modules that way. Here the cut is made on purpose, to the
// requests named (Playwright aborts them as the network would), so each case happens every run.

let server: TestServer;

/** Requests that failed other than by this file's cuts (ERR_INTERNET_DISCONNECTED): said on a failure. */
let otherFailures: string[] = [];

// A server a test: each signs its own first person up.
test.beforeEach(async ({ page }) => {
  server = await startServer({ HOLM_SERVER_TOKEN: "" });
  otherFailures = [];
  // The network can cut requests of its own here too (the run's other suites start boxes beside
  // this one); a failure then says which, as the exact counts below do not allow for them.
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText;
    if (why !== "net::ERR_INTERNET_DISCONNECTED") otherFailures.push(`${r.method()} ${r.url()}: ${why}`);
  });
});

test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus && otherFailures.length) {
    console.warn(`${testInfo.title}: requests the network failed besides the test's cuts:\n  ${otherFailures.join("\n  ")}`);
  }
  await server?.stop();
});

// None of these tests makes a box; whatever this run's label marks is removed all the same.
test.afterAll(async () => {
  await removeTestBoxes();
});

/**
 * The count a case makes when only its own cuts happen: exactly that. When the network also cut
 * requests of its own (ERR_NETWORK_CHANGED: in CI the integration suites start boxes beside this
 * one), the counts are its too: a cut document is Chromium's error page, which loads the page
 * again by itself, and so on. Then the count is only reported (the test's report says which
 * requests the network cut); the page still has to end whole, and the loads to stop.
 */
function expectCount(actual: number, expected: number, what: string) {
  const own = otherFailures.filter((f) => f.endsWith("net::ERR_NETWORK_CHANGED"));
  if (!own.length) return expect(actual, what).toBe(expected);
  const description = `${what}: ${actual} (${expected} when only the test cuts); the network cut ${own.join(", ")}`;
  test.info().annotations.push({ type: "network", description });
  console.warn(`${test.info().title}: ${description}`);
}

/** Cuts the first `times` requests whose URL matches, and lets the rest through; counts them all. */
async function cut(page: Page, pattern: RegExp, times: number, method = "GET") {
  const seen = { requests: 0 };
  await page.route(pattern, (route: Route) => {
    if (route.request().method() !== method) return route.fallback();
    seen.requests++;
    return seen.requests <= times ? route.abort("internetdisconnected") : route.fallback();
  });
  return seen;
}

/** Counts the page's document loads (a reload while loading fires no `load` event). */
function countLoads(page: Page) {
  const seen = { loads: 0 };
  page.on("request", (r) => {
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) seen.loads++;
  });
  return seen;
}

/** The box list is there, styled and hydrated. */
async function expectWholeBoxList(page: Page) {
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  // Tailwind's min-h-screen on <body>: only there with the stylesheet.
  const viewport = page.viewportSize()!;
  await expect.poll(() => page.evaluate(() => getComputedStyle(document.body).minHeight)).toBe(`${viewport.height}px`);
  // The page's own effect ran: React hydrated it.
  await expect.poll(() => page.evaluate(() => performance.getEntriesByName("holm:box-list:interactive").length)).toBe(1);
}

test("a page that lost its stylesheet, then its entry module, loads again until whole", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ines", "ines@example.com", "Cuts");
  await expectWholeBoxList(page);

  const css = await cut(page, /\/assets\/root-[^/]*\.css$/, 1);
  const entry = await cut(page, /\/assets\/entry\.client-[^/]*\.js$/, 2);
  const seen = countLoads(page);
  await page.goto(`${server.base}/`);
  await expectWholeBoxList(page);
  // Load 1 lost the stylesheet and the entry module, load 2 the entry module; load 3 is whole.
  expectCount(css.requests, 3, "stylesheet requests");
  expectCount(entry.requests, 3, "entry module requests");
  expectCount(seen.loads, 3, "loads");
});

test("a stylesheet that never comes is asked for three times, then the page stays as it is", async ({ page }) => {
  const css = await cut(page, /\/assets\/root-[^/]*\.css$/, Infinity);
  const seen = countLoads(page);
  await page.goto(`${server.base}/signup`);
  await expect.poll(() => seen.loads).toBeGreaterThanOrEqual(3);
  await expect(page.getByRole("button", { name: "Create account" })).toBeVisible();
  // No loop: the page stays (unstyled, but there and usable) however long it is left.
  const settled = seen.loads;
  await page.waitForTimeout(3000);
  expect(seen.loads, "loads after the page settled").toBe(settled);
  expectCount(settled, 3, "loads");
  expectCount(css.requests, 3, "stylesheet requests");
});

test("a navigation whose data was cut is fetched again; a change is never sent twice", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ines", "ines@example.com", "Cuts");
  await expectWholeBoxList(page);

  // A client-side navigation: its loader data is one GET of /keys.data, cut once.
  const data = await cut(page, /\/keys\.data(\?|$)/, 1);
  await page.getByRole("link", { name: "API keys" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Cuts" })).toBeVisible();
  await expect(page.getByText("Something went wrong")).toHaveCount(0);
  expectCount(data.requests, 2, "/keys.data requests");

  // Creating a key is a POST: cut once, it is not sent again, and the person is told what
  // happened and what to do (not "an unexpected error").
  const post = await cut(page, /\/keys(\.data)?(\?|$)/, 1, "POST");
  await page.getByLabel("Name", { exact: true }).fill("once");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByRole("heading", { name: "The connection was cut" })).toBeVisible();
  await expect(page.getByText("it may or may not have been made")).toBeVisible();
  await page.waitForTimeout(1000);
  expect(post.requests).toBe(1);
  await expect(page.getByTestId("new-key")).toHaveCount(0);
  // Reload shows where things stand: the keys page, whole, with no key made.
  await page.getByRole("button", { name: "Reload" }).click();
  await expect(page.getByRole("heading", { name: "API keys for Cuts" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Create key" })).toBeVisible();
  await expect(page.getByRole("cell", { name: "once", exact: true })).toHaveCount(0);
  expect(post.requests).toBe(1);
  // Sent again by the person, it goes through.
  await page.getByLabel("Name", { exact: true }).fill("once");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByTestId("new-key")).toBeVisible();
  await expect(page.getByRole("cell", { name: "once", exact: true })).toHaveCount(1);
});
