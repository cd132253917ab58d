import { type Page, expect, test } from "@playwright/test";
import { signUpAndKey, openLaunchForm } from "../support/browser";
import { type TestServer, docker, json, removeTestBoxes, startServer } from "../support/server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// A box's start as people see it, against real boxes and real image builds: a console launch
// waits for its start slot and walks its phases to ready with the time it took; an image build
// shows its steps and its log; a box whose image cannot be built shows that it failed, why, in
// which phase, with its log, and nothing of a desktop; pause, resume, stop and remove say what
// they are doing while they run.

// One start at a time, so the console's launch waits behind the image build (its phases are
// then seen one by one), and queued launches (202) like the console's own.
// `local` keeps the records and sessions across the restarts of the last test.
const SERVER_ENV = { HOLM_LAUNCH_CONCURRENCY: "1", HOLM_SERVER_JOBS: "queue", HOLM_STORAGE_BACKEND: "local" };
// A tiny Debian package no other test asks for: its image is removed before and after, so the
// build (a few later layers on an existing image: about 10 s here) happens in every run.
const BUILD_PACKAGE = "tree";
// No such package: apt says so at step 4 of 10. As long as a package name may be, so the reason
// holds an unbroken 120-character word that has to wrap inside its card.
const MISSING_PACKAGE = `no-such-package-${"x".repeat(104)}`;

let server: TestServer;
let key = "";
let built = "";

const asKey = async (path: string, body?: unknown, method = body === undefined ? "GET" : "POST") =>
  fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function removeImagesOf(pkg: string) {
  for (const img of await docker.listImages({ filters: { label: [`holm.packages=${pkg}`] } })) {
    await docker.getImage(img.Id).remove({ force: true }).catch(() => undefined);
  }
}

test.beforeAll(async () => {
  await removeImagesOf(BUILD_PACKAGE);
  server = await startServer(SERVER_ENV);
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
  await removeImagesOf(BUILD_PACKAGE);
});

test.describe.configure({ mode: "serial" });

const elapsed = async (page: Page) => Number((await page.getByTestId("start-elapsed").textContent())!.replace(/[^0-9.]/g, ""));

const removeBox = (id: string) =>
  fetch(`${server.base}/v1/boxes/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}`, "x-holm-confirm-delete": "true" } });

interface Seen {
  /** Each phase the checklist marked as current, in the order it did. */
  steps: string[];
  /** Each text the image build's step line showed. */
  stepTexts: string[];
  /** Each text the image build's bar had. */
  build: string[];
  /** Whether the start log showed the package step, and the package. */
  logStep4: boolean;
  logPackage: boolean;
}

/**
 * Watches the box page from inside it (every 50 ms, as a person looking at it would), so a phase
 * that lasts a moment is still seen; read it back with `seen`.
 */
async function watchStart(page: Page, pkg: string) {
  await page.evaluate((pkg) => {
    const seen: Seen = { steps: [], stepTexts: [], build: [], logStep4: false, logPackage: false };
    (window as unknown as { __seen: Seen }).__seen = seen;
    setInterval(() => {
      const cur = document.querySelector('[aria-label="Start phases"] [aria-current="step"] [data-step]')?.textContent;
      if (cur && seen.steps.at(-1) !== cur) seen.steps.push(cur);
      const bar = document.querySelector('[role="progressbar"][aria-label="Image build"]')?.getAttribute("aria-valuetext");
      if (bar && seen.build.at(-1) !== bar) seen.build.push(bar);
      const stepText = document.querySelector('[data-testid="build-step"]')?.textContent;
      if (stepText && seen.stepTexts.at(-1) !== stepText) seen.stepTexts.push(stepText);
      const log = document.querySelector('[aria-label="Start log"]')?.textContent ?? "";
      if (log.includes("Step 4/10 : RUN apt-get")) seen.logStep4 = true;
      if (log.includes(pkg)) seen.logPackage = true;
    }, 50);
  }, pkg);
}

const seen = (page: Page) => page.evaluate(() => (window as unknown as { __seen: Seen }).__seen);

/** The Details card's "Started" row: "in 4.2 s" (or "in 1 min 05 s"). */
const STARTED_IN = /^in (\d+\.\d s|\d+ min \d\d s)$/;

const ORDER = ["Start slot", "Image", "Container", "X display", "VNC", "Browser", "Agent"];

test("a console launch waits its turn and walks its phases to ready; an image build shows its steps and log", async ({ page, context }, info) => {
  refuseNativeDialogs(page);
  key = await signUpAndKey(page, server, "Ada");

  // An agent's box that needs an image built: it takes the only start slot.
  const res = await asKey("/v1/boxes", { spec: { desktop: { features: [], packages: [BUILD_PACKAGE] } } });
  expect(res.status, await res.clone().text()).toBe(202);
  built = (await json(res)).id;
  const building = await context.newPage();
  await building.goto(`${server.base}/boxes/${built}`);
  await watchStart(building, BUILD_PACKAGE);
  const bar = building.getByRole("progressbar", { name: "Image build" });
  await expect(bar).toBeVisible();

  // A box launched from the console waits behind it.
  await page.goto(server.base);
  await openLaunchForm(page);
  await page.getByRole("button", { name: "Launch box" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Launching" })).toBeVisible();
  const all = await json(await asKey("/v1/boxes"));
  const launched: string = all.boxes.find((b: { id: string }) => b.id !== built).id;
  await page.goto(`${server.base}/boxes/${launched}`);
  await watchStart(page, BUILD_PACKAGE);
  await expect(page.getByRole("heading", { name: "Starting the box" })).toBeVisible();
  await expect(page.getByText("Waiting for a start slot…")).toBeVisible();
  // The time so far ticks.
  const t1 = await elapsed(page);
  await expect.poll(() => elapsed(page)).toBeGreaterThan(t1 + 0.4);
  // Nothing of a desktop yet.
  await expect(page.getByTestId("control-banner")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await expect(page.getByText("Terminal", { exact: true })).toHaveCount(0);
  await expect(page.getByTestId("vnc")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Remove", exact: true })).toBeVisible();
  await attachShot(page, info, "queued behind an image build");

  // The agent's box builds its image: the step of how many as a bar, the log's tail below.
  // Seen by the page's own watcher (every 50 ms): with Docker's build cache warm the build can be
  // over, and the bar gone, by the time the steps above are done (CI run of f0902ac).
  await expect
    .poll(async () => {
      const now = await seen(building);
      return now.build.some((t) => /^step \d+ of 10$/.test(t)) && now.stepTexts.some((t) => /^step \d+ of 10$/.test(t));
    }, { timeout: 60_000 })
    .toBe(true);
  if (await bar.isVisible()) await attachShot(building, info, "image build: steps and log");
  await expect(building.getByTestId("box-state").first()).toHaveText("ready", { timeout: 120_000 });
  const build = await seen(building);
  const numbers = build.build.map((t) => Number(/^step (\d+) of 10$/.exec(t)?.[1] ?? 0));
  expect(Math.max(...numbers), build.build.join(", ")).toBeGreaterThanOrEqual(4);
  expect(numbers, "the step only goes up").toEqual([...numbers].sort((a, b) => a - b));
  expect(build.logStep4 && build.logPackage, "the log showed the package's step").toBe(true);
  expect(build.steps).toContain("Image");
  await expect(building.getByText(STARTED_IN)).toBeVisible();
  const start = (await json(await asKey(`/v1/boxes/${built}`))).start;
  expect(start.phases.map((p: { name: string }) => p.name)).toEqual(["queued", "image", "container", "x", "vnc", "browser", "agent"]);
  expect(start.log.join("\n")).toContain("Successfully tagged");
  console.log(`image build of ${BUILD_PACKAGE}: ${start.phases[2].at_ms - start.phases[1].at_ms} ms`);
  await building.close();

  // The launched box walked its phases, in order, to ready, and says how long it took.
  await expect(page.getByTestId("box-state").first()).toHaveText("ready", { timeout: 60_000 });
  const walked = (await seen(page)).steps;
  expect(walked[0]).toBe("Start slot");
  expect(walked.length, `phases seen: ${walked.join(", ")}`).toBeGreaterThanOrEqual(3);
  const at = walked.map((s) => ORDER.indexOf(s));
  expect(at, walked.join(", ")).toEqual([...at].sort((a, b) => a - b));
  await expect(page.getByText(STARTED_IN)).toBeVisible();
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await attachShot(page, info, "ready: started in");
  await removeBox(launched);
});

test("a box whose image cannot be built shows it failed, why, where and its log, and nothing of a desktop", async ({ page }, info) => {
  refuseNativeDialogs(page);
  await logIn(page);
  const res = await asKey("/v1/boxes", { spec: { desktop: { features: [], packages: [MISSING_PACKAGE] } } });
  expect(res.status, await res.clone().text()).toBe(202);
  const id: string = (await json(res)).id;
  await page.goto(`${server.base}/boxes/${id}`);
  const card = page.getByTestId("start-failed");
  await expect(card.getByRole("heading", { name: "This box failed to start" })).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId("box-state").first()).toHaveText("failed");
  await expect(card.getByText("Failed while building the image after")).toBeVisible();
  const reason = page.getByTestId("failed-reason");
  await expect(reason).toContainText(`E: Unable to locate package ${MISSING_PACKAGE}`);
  await expect(reason).toContainText("step 4 of 10");
  await expect(reason).not.toContainText("docker logs");
  await expect(card.locator('[aria-label="Start phases"] li[data-state="failed"]')).toHaveText(/Image/);
  const log = card.getByRole("region", { name: "Start log" });
  await expect(log).toContainText("E: Unable to locate package");
  await expect(log).toContainText("Step 4/10");

  // None of what would say the box runs.
  await expect(page.getByText("● live")).toHaveCount(0);
  await expect(page.getByText("○ connecting…")).toHaveCount(0);
  await expect(page.getByTestId("control-banner")).toHaveCount(0);
  await expect(page.getByText("The agent has control")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Take over" })).toHaveCount(0);
  await expect(page.getByText("Terminal", { exact: true })).toHaveCount(0);
  await expect(page.getByText(/expires in/i)).toHaveCount(0);
  await expect(page.getByText("Expires", { exact: true })).toHaveCount(0);
  await expect(page.getByTestId("vnc")).toHaveCount(0);
  // What can be done: remove it, or launch it again; once each.
  await expect(page.getByRole("button", { name: "Remove", exact: true })).toHaveCount(1);
  await expect(page.getByRole("button", { name: "Launch again" })).toHaveCount(1);

  // The reason wraps inside its card, the log scrolls inside it, at desktop width and at 390 px.
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    const c = (await card.boundingBox())!;
    const r = (await reason.boundingBox())!;
    const l = (await log.locator("pre").boundingBox())!;
    for (const inner of [r, l]) {
      expect(inner.x, `at ${width} px`).toBeGreaterThanOrEqual(c.x);
      expect(inner.x + inner.width, `at ${width} px`).toBeLessThanOrEqual(c.x + c.width + 0.5);
    }
    expect(await reason.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
    expect(await log.locator("pre").evaluate((e) => e.scrollHeight > e.clientHeight && getComputedStyle(e).overflowY === "auto")).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await attachShot(page, info, `failed box at ${width} px`, { fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });

  // GET /v1/boxes/{id} says the same.
  const box = await json(await asKey(`/v1/boxes/${id}`));
  expect(box.start).toMatchObject({ phase: "failed", failed_in: "image" });
  expect(box.reason).not.toMatch(/docker logs|holm-box_/);

  // Launch again: a new box with the same spec, on its own page, starting.
  await delayPosts(page, id, 800);
  await page.getByRole("button", { name: "Launch again" }).click();
  await expect(page.getByRole("button", { name: "Launching…" })).toBeDisabled();
  await expect(page).not.toHaveURL(new RegExp(`/boxes/${id}$`));
  await expect(page).toHaveURL(/\/boxes\/box_[0-9a-f]{32}$/);
  const again = page.url().split("/").at(-1)!;
  const relaunched = await json(await asKey(`/v1/boxes/${again}`));
  expect(relaunched.spec).toEqual(box.spec);
  expect(relaunched.placement).toEqual(box.placement);
  await expect(page.getByRole("heading", { name: /Starting the box|This box failed to start/ })).toBeVisible();
  await attachShot(page, info, "launched again");
  for (const b of [id, again]) await removeBox(b);
});

test("pause, resume, stop and remove say what they are doing while they run", async ({ page }, info) => {
  refuseNativeDialogs(page);
  await logIn(page);
  await page.goto(`${server.base}/boxes/${built}`);
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  // Each form's answer is held back a moment, so what the page shows meanwhile can be seen.
  await delayPosts(page, built, 1200);
  const pill = page.getByTestId("box-state").first();

  const step = async (button: string, doing: string, after: string) => {
    await page.getByRole("button", { name: button, exact: true }).click();
    await expect(page.getByRole("button", { name: `${doing}…` })).toBeDisabled();
    await expect(pill).toHaveText(`${doing.toLowerCase()}…`);
    // The other actions wait too.
    for (const b of await page.getByRole("region", { name: "Actions" }).getByRole("button").all()) await expect(b).toBeDisabled();
    await attachShot(page, info, doing);
    await expect(pill).toHaveText(after);
  };
  await step("Pause", "Pausing", "paused");
  await expect(page.getByText("The box is paused. Resume it to see the screen.")).toBeVisible();
  await expect(page.getByTestId("control-banner")).toHaveCount(0);
  await expect(page.getByText("Terminal", { exact: true })).toHaveCount(0);
  await step("Resume", "Resuming", "ready");
  await expect(page.getByTestId("control-banner")).toContainText("The agent has control");
  await step("Stop", "Stopping", "stopped");
  await expect(page.getByText("The box is stopped. Resume it to see the screen.")).toBeVisible();
  await expect(page.getByTestId("control-banner")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Take over" })).toHaveCount(0);

  await page.getByRole("button", { name: "Remove", exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove box" }).click();
  await expect(page.getByRole("button", { name: "Removing…" })).toBeDisabled();
  await expect(pill).toHaveText("removing…");
  await attachShot(page, info, "Removing");
  await expect(page.getByRole("heading", { name: "This box was removed" })).toBeVisible();
});

test("a box whose runtime does not answer is unreachable: no screen, no control, only Remove", async ({ page }, info) => {
  refuseNativeDialogs(page);
  const res = await asKey("/v1/boxes", {});
  expect(res.status).toBe(202);
  const id: string = (await json(res)).id;
  await expect.poll(async () => (await json(await asKey(`/v1/boxes/${id}`))).state, { timeout: 60_000 }).toBe("ready");
  // The same server, restarted with no engine behind its socket.
  const env = server.env;
  await server.stop();
  server = await startServer({}, { ...server, env: { ...env, HOLM_DOCKER_SOCKET: "/nonexistent/docker.sock" } });
  try {
    await logIn(page);
    await page.goto(`${server.base}/boxes/${id}`);
    await expect(page.getByTestId("box-state").first()).toHaveText("unreachable");
    await expect(page.getByText("The box is unreachable: the docker runtime does not answer")).toBeVisible();
    await expect(page.getByTestId("control-banner")).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Take over" })).toHaveCount(0);
    await expect(page.getByText("Terminal", { exact: true })).toHaveCount(0);
    await expect(page.getByTestId("vnc")).toHaveCount(0);
    await expect(page.getByTestId("viewer-status")).toHaveCount(0);
    const actions = page.getByRole("region", { name: "Actions" }).getByRole("button");
    await expect(actions).toHaveText(["Remove"]);
    await attachShot(page, info, "unreachable");
  } finally {
    await server.stop();
    server = await startServer({}, { ...server, env });
  }
  await removeBox(id);
});

/** Holds back the page's form posts about a box for `ms` (as a slow server would). */
async function delayPosts(page: Page, id: string, ms: number) {
  await page.route(
    (url) => url.pathname.startsWith(`/boxes/${id}`),
    async (route) => {
      if (route.request().method() === "POST") await new Promise((r) => setTimeout(r, ms));
      await route.continue();
    },
  );
}

async function logIn(page: Page) {
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: /log in/i }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
}
