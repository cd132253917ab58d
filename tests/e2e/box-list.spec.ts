import { execFileSync } from "node:child_process";
import { type BrowserContext, type Page, expect, test } from "@playwright/test";
import { signUp, openLaunchForm } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// The console's box list against real boxes: names set through /v1 (at create and by PATCH) and
// from the console show live in every open list; label chips, the label and state filters,
// search and sort, all kept in the URL; who created each box by name (the key's, the person's);
// a live thumbnail that changes when an agent's batch changes the screen, and stays when the box
// stops; no sideways scroll at 390 px; the empty state's curl line, run as shown, makes a box.

let server: TestServer;
/** One signed-in browser for the whole file (Ada's session), a fresh page per test. */
let ctx: BrowserContext;
let page: Page;
let key = "";
let apiBox = "";
let consoleBox = "";

test.beforeAll(async ({ browser }) => {
  server = await startServer();
  ctx = await browser.newContext();
});

test.beforeEach(async () => {
  page = await ctx.newPage();
  refuseNativeDialogs(page);
});

test.afterEach(async () => {
  await page.close();
});

test.afterAll(async () => {
  await ctx?.close();
  await server?.stop();
  await removeTestBoxes();
});

test.describe.configure({ mode: "serial" });

const asKey = (path: string, body?: unknown, method = body === undefined ? "GET" : "POST", bearer = key) =>
  fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const rowOf = (page: Page, id: string) => page.getByRole("row").filter({ hasText: id.slice(0, 16) });
const boxRows = (page: Page) => page.getByRole("row").filter({ hasText: "box_" });

/** Opens the list and waits until it is live (hydrated, its socket connected), as a person would see. */
async function openList(page: Page, path = "/") {
  await page.goto(`${server.base}${path}`);
  await expect(page.getByText("● live")).toBeVisible();
}

/** The ids of the rows in the order the list shows them. */
const order = (page: Page) => boxRows(page).evaluateAll((rows) => rows.map((r) => r.getAttribute("data-box-id")));

async function makeKey(page: Page, name: string): Promise<string> {
  await page.goto(`${server.base}/keys`);
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByRole("button", { name: "Create key" }).click();
  return (await page.getByTestId("new-key").textContent())!.trim();
}

/** The mean colour of a row's thumbnail as the page shows it, or undefined while it has none. */
function thumbColour(page: Page, alt: string): Promise<number[] | undefined> {
  return page.evaluate(async (alt) => {
    const img = [...document.querySelectorAll("img")].find((i) => i.alt === alt);
    if (!img || !img.complete || img.naturalWidth === 0) return undefined;
    const c = document.createElement("canvas");
    c.width = 40;
    c.height = 25;
    const g = c.getContext("2d")!;
    g.drawImage(img, 0, 0, 40, 25);
    const d = g.getImageData(0, 0, 40, 25).data;
    const sum = [0, 0, 0];
    for (let i = 0; i < d.length; i += 4) for (let k = 0; k < 3; k++) sum[k]! += d[i + k]!;
    return sum.map((s) => Math.round(s / (d.length / 4)));
  }, alt);
}

test("names from /v1 and from the console show live, with labels and who created each box", async ({}, info) => {
  await page.goto(server.base);
  await signUp(page, "Ada Lovelace", "ada@example.com", "Lab");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  key = await makeKey(page, "ci agent");
  await page.goto(server.base);
  await expect(page.getByText("● live")).toBeVisible();

  // A box made by the key, named and labelled at create: it appears live, by the key's name.
  const created = await asKey("/v1/boxes", { metadata: { name: "api box", labels: { team: "red" } } });
  expect(created.status).toBe(200);
  apiBox = (await json(created)).id;
  const apiRow = rowOf(page, apiBox);
  await expect(apiRow.getByRole("link", { name: "api box", exact: true })).toBeVisible();
  await expect(apiRow.getByRole("link", { name: "team=red", exact: true })).toBeVisible();
  await expect(apiRow.getByTestId("created-by")).toHaveText("ci agent");
  await expect(apiRow.getByText("key", { exact: true })).toBeVisible();
  await expect(apiRow.getByText("ready")).toBeVisible();

  // A box launched from the console with a name: the person's name.
  await openLaunchForm(page);
  await page.getByLabel("Name (optional)").fill("console box");
  await page.getByLabel("Labels (optional)").fill("team=blue");
  await page.getByRole("button", { name: "Launch box" }).click();
  const consoleRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: "console box", exact: true }) });
  await expect(consoleRow).toHaveCount(1);
  consoleBox = (await consoleRow.getAttribute("data-box-id"))!;
  await expect(consoleRow.getByTestId("created-by")).toHaveText("Ada Lovelace");
  await expect(consoleRow.getByText("ready")).toBeVisible({ timeout: 120_000 });

  // A second list, open in another tab, sees every change without a reload.
  const other = await ctx.newPage();
  await other.goto(server.base);
  await expect(other.getByText("● live")).toBeVisible();

  // Renamed through /v1: both lists show it live.
  const patched = await asKey(`/v1/boxes/${apiBox}`, { name: "api box renamed" }, "PATCH");
  expect(patched.status).toBe(200);
  expect((await json(patched)).name).toBe("api box renamed");
  await expect(apiRow.getByRole("link", { name: "api box renamed", exact: true })).toBeVisible();
  await expect(rowOf(other, apiBox).getByRole("link", { name: "api box renamed", exact: true })).toBeVisible();

  // Renamed from the console: the other list shows it live, and /v1 reads it.
  await consoleRow.getByRole("button", { name: "Rename console box" }).click();
  await page.getByLabel(`Name of ${consoleBox}`).fill("renamed in console");
  await page.getByRole("button", { name: "Save" }).click();
  const renamedRow = rowOf(page, consoleBox);
  await expect(renamedRow.getByRole("link", { name: "renamed in console", exact: true })).toBeVisible();
  await expect(rowOf(other, consoleBox).getByRole("link", { name: "renamed in console", exact: true })).toBeVisible();
  expect((await json(await asKey(`/v1/boxes/${consoleBox}`))).name).toBe("renamed in console");

  // A name the API refuses is refused here too, with its message.
  await renamedRow.getByRole("button", { name: "Rename renamed in console" }).click();
  await page.getByLabel(`Name of ${consoleBox}`).fill("bell\u0007name");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(renamedRow.getByRole("alert")).toContainText("name: a name has no control characters");
  await page.getByRole("button", { name: "Cancel" }).click();

  // Labels from the console: a chip is added and removed, live in the other list and in /v1.
  await renamedRow.getByRole("button", { name: "Edit labels of renamed in console" }).click();
  await page.getByLabel("New label for renamed in console").fill("env=dev");
  await page.getByLabel("New label for renamed in console").press("Enter");
  await expect(renamedRow.getByRole("link", { name: "env=dev", exact: true })).toBeVisible();
  await expect(rowOf(other, consoleBox).getByRole("link", { name: "env=dev", exact: true })).toBeVisible();
  await renamedRow.getByRole("button", { name: "Remove label team=blue from renamed in console" }).click();
  await expect(renamedRow.getByRole("link", { name: "team=blue", exact: true })).toHaveCount(0);
  await renamedRow.getByRole("button", { name: "Done" }).click();
  expect((await json(await asKey(`/v1/boxes/${consoleBox}`))).labels).toEqual({ env: "dev" });
  await expect(rowOf(other, consoleBox).getByRole("link", { name: "team=blue", exact: true })).toHaveCount(0);
  await other.close();
  await attachShot(page, info, "list with names, labels and creators");
});

test("label and state filters, search and sort live in the URL", async ({}, info) => {
  // The page logs no error on the way (a hydration mismatch would be one).
  const errors: string[] = [];
  page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
  page.on("pageerror", (e) => void errors.push(e.message));
  await openList(page);
  await expect(boxRows(page)).toHaveCount(2);
  const filter = page.getByRole("search", { name: "Filter boxes" });

  // The label filter, chosen in the select: one box; the URL keeps it through a reload.
  await filter.getByLabel("Label").selectOption("team=red");
  await expect(boxRows(page)).toHaveCount(1);
  await expect(rowOf(page, apiBox)).toBeVisible();
  await expect(page).toHaveURL(/label=team%3Dred/);
  await page.reload();
  await expect(page.getByText("● live")).toBeVisible();
  await expect(boxRows(page)).toHaveCount(1);
  await expect(filter.getByLabel("Label")).toHaveValue("team=red");
  await filter.getByRole("button", { name: "Clear filters" }).click();
  await expect(boxRows(page)).toHaveCount(2);

  // A chip is a link to its label's filter.
  await rowOf(page, consoleBox).getByRole("link", { name: "env=dev", exact: true }).click();
  await expect(boxRows(page)).toHaveCount(1);
  await expect(rowOf(page, consoleBox)).toBeVisible();
  await expect(filter.getByLabel("Label")).toHaveValue("env=dev");
  await filter.getByRole("button", { name: "Clear filters" }).click();

  // Search: by name, by creator, by id, by label; several words must all match.
  const search = filter.getByLabel("Search");
  const only = async (text: string, id: string) => {
    await search.fill(text);
    await expect(boxRows(page)).toHaveCount(1);
    await expect(rowOf(page, id)).toBeVisible();
  };
  await only("renamed in", consoleBox);
  await only("ci agent", apiBox);
  await only("Ada", consoleBox);
  await only(apiBox.slice(4, 14), apiBox);
  await only("team=red", apiBox);
  await search.fill("renamed nothing-like-this");
  await expect(boxRows(page)).toHaveCount(0);
  await expect(page.getByRole("heading", { name: "No boxes match" })).toBeVisible();
  await expect(page).toHaveURL(/q=renamed\+nothing-like-this/);
  await page.reload();
  await expect(page.getByText("● live")).toBeVisible();
  await expect(filter.getByLabel("Search")).toHaveValue("renamed nothing-like-this");
  await expect(page.getByRole("heading", { name: "No boxes match" })).toBeVisible();
  await filter.getByRole("button", { name: "Clear filters" }).click();

  // Sort: newest first by default, oldest, by name.
  await expect(boxRows(page)).toHaveCount(2);
  expect(await order(page)).toEqual([consoleBox, apiBox]);
  await filter.getByLabel("Sort").selectOption("oldest");
  await expect.poll(() => order(page)).toEqual([apiBox, consoleBox]);
  await filter.getByLabel("Sort").selectOption("name");
  await expect.poll(() => order(page)).toEqual([apiBox, consoleBox]);
  await asKey(`/v1/boxes/${apiBox}`, { name: "zz last by name" }, "PATCH");
  await expect.poll(() => order(page)).toEqual([consoleBox, apiBox]);
  await page.reload();
  await expect(page.getByText("● live")).toBeVisible();
  await expect(filter.getByLabel("Sort")).toHaveValue("name");
  expect(await order(page)).toEqual([consoleBox, apiBox]);

  // The state filter follows the box live: stop one, and it is the only stopped one.
  await rowOf(page, consoleBox).getByRole("button", { name: `Stop ${consoleBox}` }).click();
  await expect(rowOf(page, consoleBox).getByText("stopped")).toBeVisible();
  // A row's action keeps the list's query.
  await expect(page).toHaveURL(/sort=name/);
  await filter.getByLabel("State").selectOption("stopped");
  await expect(boxRows(page)).toHaveCount(1);
  await expect(rowOf(page, consoleBox)).toBeVisible();
  await attachShot(page, info, "filtered to stopped, sorted by name");
  await filter.getByLabel("State").selectOption("ready");
  await expect(boxRows(page)).toHaveCount(1);
  await expect(rowOf(page, apiBox)).toBeVisible();
  expect(errors).toEqual([]);
});

test("a thumbnail follows the screen: it changes after an agent's batch, and stays when the box stops", async ({}, info) => {
  await openList(page);
  const alt = "Screen of zz last by name";
  await expect(page.getByRole("img", { name: alt })).toBeVisible();
  // Visible is not yet drawn: wait for the picture itself to have loaded.
  await expect.poll(() => thumbColour(page, alt)).toBeDefined();
  const before = (await thumbColour(page, alt))!;
  // The desktop is not the page below: far from its solid red.
  expect(before[0]! - before[1]!).toBeLessThan(120);

  // The server answers its thumbnail with an ETag and 304 for it, privately cached.
  const res = await page.request.get(`${server.base}/boxes/${apiBox}/thumb`);
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toBe("image/png");
  expect(res.headers()["cache-control"]).toContain("private");
  const etag = res.headers().etag!;
  expect(etag).toMatch(/^"[0-9a-f]+"$/);
  const again = await page.request.get(`${server.base}/boxes/${apiBox}/thumb`, { headers: { "if-none-match": etag } });
  expect(again.status()).toBe(304);

  const batch = await asKey(`/v1/boxes/${apiBox}/screens/0/actions`, {
    actions: [{ type: "open_url", url: "data:text/html,<body style='margin:0;background:rgb(220,0,0);height:100vh'></body>" }, { type: "wait", ms: 500 }],
  });
  expect(batch.status).toBe(200);
  // The page shows the new screen by itself within a few seconds: mostly red now.
  await expect
    .poll(async () => {
      const c = await thumbColour(page, alt);
      return c ? c[0]! - c[1]! : -1;
    }, { timeout: 30_000 })
    .toBeGreaterThan(120);
  await attachShot(page, info, "thumbnail after the batch");

  // The stopped box keeps the last picture it had, and a stopped box is not asked for a new one.
  const stopped = page.getByRole("img", { name: "Screen of renamed in console" });
  await expect(stopped).toBeVisible();
});

test("at 390 px wide nothing scrolls sideways", async ({}, info) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await openList(page);
  await expect(boxRows(page)).toHaveCount(2);
  await openLaunchForm(page);
  await rowOf(page, consoleBox).getByRole("button", { name: "Edit labels of renamed in console" }).click();
  await rowOf(page, apiBox).getByRole("button", { name: "Rename zz last by name" }).click();
  const overflow = await page.evaluate(() => {
    const s = document.scrollingElement!;
    return { scroll: s.scrollWidth, client: s.clientWidth };
  });
  expect(overflow.scroll).toBeLessThanOrEqual(overflow.client);
  await attachShot(page, info, "390 px", { fullPage: true });
});

test("the empty state's curl line, run as shown with a real key, makes a box that appears live", async ({}, info) => {
  await page.goto(`${server.base}/workspaces/new`);
  await page.getByLabel("Workspace name").fill("Empty");
  await page.getByRole("button", { name: "Create workspace" }).click();
  await expect(page.getByText("Isolated desktops in Empty")).toBeVisible();
  const emptyKey = await makeKey(page, "empty key");
  await page.goto(server.base);
  await expect(page.getByRole("heading", { name: "No boxes yet" })).toBeVisible();
  await expect(page.getByText("● live")).toBeVisible();
  await attachShot(page, info, "empty state");
  const line = (await page.getByTestId("empty-curl").textContent())!.trim();
  // The name the README and the holm CLI use for the key.
  expect(line).toContain("$HOLM_TOKEN");
  const out = execFileSync("bash", ["-c", line], { env: { ...process.env, HOLM_TOKEN: emptyKey }, encoding: "utf8", timeout: 120_000 });
  const box = JSON.parse(out);
  expect(box.id).toMatch(/^box_/);
  const row = rowOf(page, box.id);
  await expect(row).toBeVisible();
  await expect(row.getByTestId("created-by")).toHaveText("empty key");
  await expect(row.getByText("ready")).toBeVisible();
});
