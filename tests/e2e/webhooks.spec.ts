import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { signUp } from "../support/browser";
import { expectCleanOnPhone } from "../support/phone-check";
import { type TestServer, startServer } from "../support/server";
import { openStore } from "../support/store";

// The Webhooks page as a member uses it (docs/decisions/0018): add a webhook to a receiver on
// 127.0.0.1 (the server allows private targets here), see its secret once, see a delivery arrive
// in the log with its status and latency, replay it, and the receiver gets it twice; rotate its
// secret and see the new one once. The event is
// written into the server's store, as another process would record one (no box needed).

let server: TestServer;
const got: string[] = [];
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    got.push(body);
    res.end("ok");
  });
});
let rxUrl = "";

test.beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_WEBHOOK_ALLOW_PRIVATE: "1", HOLM_WEBHOOK_RETRY_BASE_MS: "300" });
});

test.afterAll(async () => {
  await server?.stop();
  await new Promise((r) => receiver.close(r));
});

test("a member adds a webhook, sees its secret once, sees a delivery, and replays it", async ({ page }) => {
  await page.goto(`${server.base}/signup`);
  await signUp(page, "Ada", "ada@example.com", "Crew");
  await expect(page.getByRole("heading", { name: "Boxes", exact: true })).toBeVisible();
  await page.getByRole("link", { name: "Webhooks" }).click();
  await expect(page.getByRole("heading", { name: "Webhooks for Crew" })).toBeVisible();
  await page.getByLabel("URL").fill(rxUrl);
  await page.getByRole("button", { name: "Add webhook" }).click();
  const secret = (await page.getByTestId("new-secret").textContent())!.trim();
  expect(secret).toMatch(/^whsec_/);
  await expect(page.getByRole("heading", { name: rxUrl })).toBeVisible();
  // Once: a fresh load of the page has the webhook, not its secret.
  await page.reload();
  await expect(page.getByRole("heading", { name: rxUrl })).toBeVisible();
  expect(await page.content()).not.toContain(secret);

  const db = openStore(server);
  const { owner } = db.prepare("select owner from webhook").get() as { owner: string };
  db.prepare("insert into event (at_ms, kind, owner, box_id) values (?, 'box.paused', ?, 'box_e2e')").run(Date.now(), owner);
  db.close();

  // The log refreshes by itself.
  const rows = page.getByTestId("delivery");
  await expect(rows).toHaveCount(1, { timeout: 20_000 });
  await expect(rows.first()).toContainText("box.paused");
  await expect(rows.first()).toContainText("delivered");
  await expect(rows.first()).toContainText(/\d+ ms/);
  expect(got).toHaveLength(1);

  await page.getByRole("button", { name: /^Replay box\.paused/ }).click();
  await expect(page.getByText("Replay queued")).toBeVisible();
  await expect(rows).toHaveCount(2, { timeout: 20_000 });
  await expect(rows.first()).toContainText("(replay)");
  await expect(rows.first()).toContainText("delivered", { timeout: 20_000 });
  expect(got).toHaveLength(2);
  expect(got[1]).toBe(got[0]);

  // Rotate the secret: asked first, the new one shown once, the old one signing for 24 h more.
  await page.getByRole("button", { name: `Rotate secret of ${rxUrl}` }).click();
  await page.getByRole("button", { name: "Rotate secret", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Secret rotated" })).toBeVisible();
  const rotated = (await page.getByTestId("new-secret").textContent())!.trim();
  expect(rotated).toMatch(/^whsec_/);
  expect(rotated).not.toBe(secret);
  await expect(page.getByText(/previous secret also signs until/)).toBeVisible();
  await page.reload();
  expect(await page.content()).not.toContain(rotated);
  await expect(page.getByText(/previous secret also signs until/)).toBeVisible();

  // Like every console page (tests/e2e/a11y.spec.ts): no serious axe violation, light or dark,
  // and no sideways scrolling on a 390 px phone, with a webhook and its log on it.
  await expectCleanOnPhone(page, `${server.base}/webhooks`, (phone) => expect(phone.getByTestId("delivery")).toHaveCount(2));

  // Delete asks in the page first; its button gone, the answer has the focus, not the page's body.
  await page.getByRole("button", { name: `Delete ${rxUrl}` }).click();
  await page.getByRole("button", { name: "Delete webhook" }).click();
  await expect(page.getByText("No webhooks yet")).toBeVisible();
  await expect(page.getByRole("status").filter({ hasText: "Webhook deleted" })).toBeFocused();
});
