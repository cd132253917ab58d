import { type Page, expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The box page as a keyboard and screen-reader user meets it, on one box: an agent's pause (and
// resume) is said through a live region that was there before it (the control banner goes away
// with the screen); the terminal lets the keyboard out (Escape then Tab, written under it) while
// Tab alone still goes to bash (and after an Escape forgotten: the focus left, or time passed);
// an old link to a screen the box does not have is not found, on the box page and in the pop-out,
// saying which screens it has, and what the link said only quoted and cut short.

let server: TestServer;
let key = "";
let boxId = "";

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  server = await startServer();
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

const asKey = (path: string, body?: unknown) =>
  fetch(`${server.base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function signUpWithBox(page: Page) {
  key = await signUpAndKey(page, server, "Ada");
  const box = await json(await asKey("/v1/boxes", {}));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
}

test("the terminal lets the keyboard out with Escape then Tab, and an agent's pause and resume are announced", async ({ page }) => {
  await signUpWithBox(page);
  await page.goto(`${server.base}/boxes/${boxId}`);
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");

  // The terminal: the keys are bash's, Tab included (completion), until Escape then Tab.
  await page.getByText("Terminal", { exact: true }).click();
  await expect(page.getByTestId("terminal-status")).toContainText("Connected");
  const input = page.getByRole("textbox", { name: "Terminal input" });
  await expect(input).toBeFocused();
  await expect(input).toHaveAccessibleDescription("Keys go to the shell. To leave the terminal, press Escape then Tab (or Shift+Tab).");
  await page.keyboard.press("Tab");
  await expect(input).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(input).toBeFocused();
  await page.keyboard.press("Shift+Tab");
  await expect(page.getByText("Terminal", { exact: true })).toBeFocused();
  await input.focus();
  await page.keyboard.press("Escape");
  await page.keyboard.press("Tab");
  await expect(input).not.toBeFocused();
  // An Escape is forgotten when the focus leaves the terminal, and after a moment: the next Tab
  // is bash's completion again, not a way out.
  await input.focus();
  await page.keyboard.press("Escape");
  await page.getByText("Terminal", { exact: true }).focus();
  await input.focus();
  await page.keyboard.press("Tab");
  await expect(input).toBeFocused();
  await page.keyboard.press("Escape");
  await page.waitForTimeout(1_700);
  await page.keyboard.press("Tab");
  await expect(input).toBeFocused();

  // The screen's status line is there (and empty) before the agent pauses the box; the same
  // element then says it, which is what makes a screen reader speak.
  const said = page.getByRole("status").and(page.getByTestId("screen-state"));
  await expect(said).toHaveText("");
  await said.evaluate((el) => el.setAttribute("data-seen-before", "yes"));
  expect((await asKey(`/v1/boxes/${boxId}/pause`, {})).status).toBe(200);
  await expect(said).toHaveText("The box is paused. Resume it to see the screen.");
  await expect(said).toBeVisible();
  await expect(said).toHaveAttribute("data-seen-before", "yes");
  expect((await asKey(`/v1/boxes/${boxId}/resume`, {})).status).toBe(200);
  await expect(said).toHaveText("The box is ready: its screen is live again.");
  await expect(said).toHaveAttribute("data-seen-before", "yes");
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
});

test("an old link to a screen the box does not have gets the not-found page, saying which screens it has", async ({ page }) => {
  await page.goto(`${server.base}/login`);
  await page.getByLabel("Email").fill("ada@example.com");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: /log in/i }).click();
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  for (const path of [`/boxes/${boxId}`, `/boxes/${boxId}/screen`]) {
    const res = await page.goto(`${server.base}${path}?screen=7`);
    expect(res?.status(), path).toBe(404);
    await expect(page.getByRole("heading", { name: "Not found", level: 1 })).toBeVisible();
    await expect(page.getByText(`Box ${boxId} has one screen, screen 0; there is no screen "7".`)).toBeVisible();
    // The link's own text is not repeated whole on this page of ours: quoted and cut short.
    await page.goto(`${server.base}${path}?screen=${encodeURIComponent("Call support at 555-0100")}`);
    await expect(page.getByText(`Box ${boxId} has one screen, screen 0; there is no screen "Call sup…".`)).toBeVisible();
    await expect(page.getByText(/555-0100/)).toHaveCount(0);
    await page.getByRole("link", { name: "Open its screen 0" }).click();
    await expect(page).toHaveURL(`${server.base}${path}`);
    await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  }
});
