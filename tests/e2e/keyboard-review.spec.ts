import { type Page, expect, test } from "@playwright/test";
import { openLaunchForm, signUp } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { refuseNativeDialogs } from "../support/shots";
import { apiAs } from "../support/workspaces";

// The console as a new person meets it by keyboard, on one box an agent made with its key:
// closing the rename and label editors gives the focus back to the button that opened them; the
// trace slider says the entry number the page shows; the creator reads "my agent (API key)"; the
// list's address and links keep no `?index` after a form was sent, and a state it does not know
// hides nothing; a viewer link to a desktop the box never ran says so.

let server: TestServer;
serverForSpec((s) => (server = s));


let page: Page;
let box: { id: string; viewer_url: string };

test.beforeAll(async ({ browser }) => {
  page = await browser.newPage();
  refuseNativeDialogs(page);
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada Lovelace", "ada@example.com", "Review");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.goto(`${server.base}/keys`);
  await page.getByLabel("Name", { exact: true }).fill("my agent");
  await page.getByRole("button", { name: "Create key" }).click();
  const api = apiAs(server, (await page.getByTestId("new-key").textContent())!.trim());
  box = await json(await api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } }, metadata: { name: "demo", labels: { team: "web" } } } }));
  expect(box.id, JSON.stringify(box)).toMatch(/^box_/);
  // A page opened: a few more entries in the trace to step through.
  const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, {
    method: "POST",
    json: { actions: [{ type: "open_url", url: "data:text/html,<title>hi</title>", target: "current" }], want: ["frame"], settle_ms: 300 },
  });
  expect(res.status, await res.clone().text()).toBe(200);
});

async function openList(path = "/") {
  await page.goto(`${server.base}${path}`);
  await expect(page.getByText("● live")).toBeVisible();
}

test("closing the rename and label editors gives the focus back to their button", async () => {
  await openList();
  const row = page.getByRole("row").filter({ hasText: box.id.slice(0, 16) });
  // Saved with Enter: the focus is on the (renamed) box's Rename button.
  await row.getByRole("button", { name: "Rename demo" }).focus();
  await page.keyboard.press("Enter");
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.type("demo two");
  await page.keyboard.press("Enter");
  await expect(row.getByRole("button", { name: "Rename demo two" })).toBeFocused();
  // Left with Escape: the same.
  await page.keyboard.press("Enter");
  await expect(row.getByRole("textbox", { name: /^Name of box_/ })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(row.getByRole("button", { name: "Rename demo two" })).toBeFocused();
  // The labels editor: Escape, and Done.
  await row.getByRole("button", { name: "Edit labels of demo two" }).focus();
  await page.keyboard.press("Enter");
  await expect(row.getByRole("textbox", { name: "New label for demo two" })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(row.getByRole("button", { name: "Edit labels of demo two" })).toBeFocused();
  await page.keyboard.press("Enter");
  await row.getByRole("button", { name: "Done" }).click();
  await expect(row.getByRole("button", { name: "Edit labels of demo two" })).toBeFocused();
  // A label typed without "=" is refused in words, not the API's field path.
  await page.keyboard.press("Enter");
  await page.keyboard.type("team web");
  await page.keyboard.press("Enter");
  await expect(row.getByRole("alert")).toHaveText(/^Write each label as key=value, separated by commas: “team web” has no “=”\. A key is 1 to 63 lowercase letters/);
  await page.keyboard.press("Escape");

  // The box's page: the Rename button there, with Enter and with Escape.
  await page.goto(`${server.base}/boxes/${box.id}`);
  const rename = page.getByRole("button", { name: "Rename demo two" });
  await rename.focus();
  await page.keyboard.press("Enter");
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.type("demo");
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { level: 1, name: /demo/ })).toBeVisible();
  await expect(page.getByRole("button", { name: "Rename demo" })).toBeFocused();
  await page.keyboard.press("Enter");
  await page.keyboard.press("Escape");
  await expect(page.getByRole("button", { name: "Rename demo" })).toBeFocused();
});

test("the trace slider says the entry number the page shows, and its place", async () => {
  await page.goto(`${server.base}/boxes/${box.id}/trace`);
  const slider = page.getByRole("slider", { name: "Trace position" });
  const caption = page.getByText(/^entry \d+ · \d+ of \d+$/);
  await slider.focus();
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowRight");
  await expect(caption).toHaveText(/^entry \d+ · 3 of \d+$/);
  const [, seq, total] = (await caption.textContent())!.match(/^entry (\d+) · 3 of (\d+)$/)!;
  await expect(slider).toHaveAttribute("aria-valuetext", new RegExp(`^entry ${seq}, 3 of ${total}, \\d\\d:\\d\\d:\\d\\d, .+`));
  // The timeline's current row is that entry.
  await expect(page.locator(`[data-testid=trace-entry]:has(> button[aria-current=true])`)).toHaveAttribute("data-seq", seq!);
});

test("who made the box reads as words: “my agent (API key)”, with a tooltip naming the key", async () => {
  await openList();
  const row = page.getByRole("row").filter({ hasText: box.id.slice(0, 16) });
  await expect(row.getByRole("cell", { name: /my agent/ })).toHaveAccessibleName(/^(Created by )?my agent \(API key\)$/);
  await expect(row.getByTestId("created-by")).toHaveAttribute("title", /^API key “my agent” \(key_[0-9a-z]+\)$/);
});

test("the launch form's label refusal is in words, and the list keeps no ?index after it", async () => {
  await openList();
  // A launch refused (no box made): said at the field in words; the address and the label links
  // are the list's own.
  await openLaunchForm(page);
  const form = page.getByRole("form", { name: "Launch a box" });
  const labels = form.getByRole("textbox", { name: "Labels (optional)" });
  await labels.fill("team web");
  await form.getByRole("button", { name: "Launch box" }).click();
  await expect(labels).toHaveAttribute("aria-invalid", "true");
  await expect(page).toHaveURL(`${server.base}/`);
  const row = page.getByRole("row").filter({ hasText: box.id.slice(0, 16) });
  await expect(row.getByRole("link", { name: "team=web", exact: true })).toHaveAttribute("href", "?label=team%3Dweb");
  await expect(labels).toHaveAccessibleDescription(/Write each label as key=value, separated by commas: “team web” has no “=”\. A key is 1 to 63/);
  await expect(labels).not.toHaveAccessibleDescription(/metadata/);
});

test("a state the list does not know hides nothing", async () => {
  await openList("/?state=bogus");
  await expect(page.getByRole("combobox", { name: "State" })).toHaveValue("");
  await expect(page.getByRole("row").filter({ hasText: box.id.slice(0, 16) })).toBeVisible();
  await expect(page.getByText("1 box", { exact: true })).toBeVisible();
});

test("a viewer link to a desktop the box never ran says so, not that the box was restarted", async () => {
  await page.goto(`${server.base}/boxes/${box.id}?screen=0&desktop=9`);
  await expect(page.getByRole("heading", { name: "This link's desktop does not exist" })).toBeVisible();
  await expect(page.getByText(/stopped and resumed/)).toHaveCount(0);
  await page.getByRole("link", { name: "Open the current desktop" }).click();
  await expect(page.getByRole("button", { name: "Rename demo" })).toBeVisible();
  await expect(page.getByRole("heading", { name: "This link's desktop does not exist" })).toHaveCount(0);
});
