import { type Browser, type Page, expect, test } from "@playwright/test";
import { signUp, signUpAndKey } from "../support/browser";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// "Takeover means hands off" (docs/security.md) in the console: while Mia holds the screen, Dan
// (another member) presses Pause on the box page and is told why it did not happen; the box runs on.

let server: TestServer;

test.beforeAll(async () => {
  server = await startServer({ HOLM_TAKEOVER_GRACE_SECS: "120" });
});

test.afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function member(browser: Browser, owner: Page, name: string): Promise<Page> {
  const email = `${name.toLowerCase()}@example.com`;
  await owner.goto(`${server.base}/members`);
  await owner.getByLabel("Email").fill(email);
  await owner.getByLabel("Role", { exact: true }).selectOption("member");
  await owner.getByRole("button", { name: "Create invitation" }).click();
  const link = (await owner.getByTestId("invite-link").textContent())!.trim();
  const page = await (await browser.newContext()).newPage();
  await page.goto(link);
  await signUp(page, name, email);
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  return page;
}

test("another member's Pause while a person holds the screen shows why it was refused; the box runs on", async ({ page, browser }) => {
  const key = await signUpAndKey(page, server, "Ada");
  const res = await fetch(`${server.base}/v1/boxes`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: "{}",
  });
  const box = await json(res);
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const mia = await member(browser, page, "Mia");
  const dan = await member(browser, page, "Dan");

  await mia.goto(`${server.base}/boxes/${box.id}`);
  await expect(mia.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await mia.getByRole("button", { name: "Take over" }).click();
  await expect(mia.getByTestId("control-banner")).toContainText("You have control");

  await dan.goto(`${server.base}/boxes/${box.id}`);
  await expect(dan.getByTestId("control-banner")).toContainText("Mia has control");
  await dan.getByRole("button", { name: "Pause" }).click();
  await expect(dan.getByText(/a person has control of screen 0 of this box; pausing the box/)).toBeVisible();
  await expect(dan.getByTestId("box-state").first()).toHaveText("ready");
  const now = await json(await fetch(`${server.base}/v1/boxes/${box.id}`, { headers: { authorization: `Bearer ${key}` } }));
  expect(now.state).toBe("ready");
});
