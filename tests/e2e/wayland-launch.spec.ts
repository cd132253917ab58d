import { expect, test } from "@playwright/test";
import { openLaunchForm, signUpAndKey } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { attachShot, refuseNativeDialogs } from "../support/shots";

// A Wayland box from the console (issue 18, ADR 0030): the launch form's "Display server" choice
// (with the taskbar, checked by default: waybar there), the box comes up ready, its
// Details say Wayland, and the live screen shows what an agent put on it.

let server: TestServer;
serverForSpec((s) => (server = s));

test("launch a Wayland box from the form and watch its screen", async ({ page }, info) => {
  test.setTimeout(600_000);
  refuseNativeDialogs(page);
  const key = await signUpAndKey(page, server, "Wanda");
  await page.goto(server.base);
  await openLaunchForm(page);
  await page.getByLabel("Name (optional)").fill("on wayland");
  await page.getByLabel("Display server").selectOption("wayland");
  await expect(page.getByText("their taskbar is waybar", { exact: false })).toBeVisible();
  await page.getByRole("button", { name: "Launch box" }).click();
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "on wayland", exact: true }) });
  await expect(row).toHaveCount(1);
  const boxId = (await row.getAttribute("data-box-id"))!;
  // Built here before by the integration suite, or now (a minute or two).
  await expect(row.getByText("ready")).toBeVisible({ timeout: 540_000 });

  const box = await json(await fetch(`${server.base}/v1/boxes/${boxId}`, { headers: { authorization: `Bearer ${key}` } }));
  expect(box.spec.desktop).toMatchObject({ server: "wayland" });
  expect(box.spec.desktop.features).toContain("dock");

  // An agent paints the screen green; the person's live view shows it.
  const batch = await fetch(`${server.base}/v1/boxes/${boxId}/screens/0/actions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ actions: [{ type: "open_url", url: "data:text/html,<style>html,body{margin:0;height:100%;background:rgb(20,200,90)}</style>", target: "current" }] }),
  });
  expect(batch.status, await batch.clone().text()).toBe(200);
  await page.goto(`${server.base}/boxes/${boxId}`);
  await expect(page.getByRole("region", { name: "Details" }).getByText("Wayland (sway)")).toBeVisible();
  await expect(page.getByTestId("vnc")).toHaveAttribute("data-state", "connected");
  await expect
    .poll(() => page.locator("[data-testid=vnc] canvas").evaluate((c: HTMLCanvasElement) => [...c.getContext("2d")!.getImageData(640, 500, 1, 1).data].slice(0, 3)), { timeout: 20_000 })
    .toEqual([20, 200, 90]);
  await attachShot(page, info, "wayland box, live");
});
