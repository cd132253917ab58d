import { expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { apiAs } from "../support/workspaces";

// The trace page as a screen reader user meets it, on a live box an agent keeps painting: the
// slider's text names the entry, its time and what happened there; the selected timeline row's
// button is "current"; an entry chosen with the page-wide ←/→ (or the timeline, the filmstrip) is
// announced politely, and the entries the live tail adds are not; a focused row keeps the focus
// while they arrive.

let server: TestServer;
serverForSpec((s) => (server = s));

function colourPage(rgb: string): string {
  const html = `<!doctype html><html><body style="margin:0;height:100vh;background:rgb(${rgb})"></body></html>`;
  return `data:text/html;base64,${Buffer.from(html).toString("base64")}`;
}

test("a screen reader hears the selected entry: the slider's text, the current row, a polite announcement", async ({ page }) => {
  const key = await signUpAndKey(page, server, "Sam");
  const api = apiAs(server, key);
  const box = await json(await api("/v1/boxes", { method: "POST", json: { spec: { desktop: { features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  const paint = async (c: string) => {
    const res = await api(`/v1/boxes/${box.id}/screens/0/actions`, {
      method: "POST",
      json: { actions: [{ type: "open_url", url: colourPage(c), target: "current" }], want: ["frame"], settle_ms: 300 },
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  await paint("220,30,30");
  await paint("30,170,60");

  await page.goto(`${server.base}/boxes/${box.id}/trace`);
  const slider = page.getByTestId("trace-slider");
  const timeline = page.getByRole("list", { name: /^Trace entries/ });
  const rowText = (seq: string) => page.locator(`[data-testid=trace-entry][data-seq="${seq}"] [data-testid=trace-entry-text]`).textContent();
  const announced = page.getByRole("status").filter({ hasText: /^entry \d+, \d+ of \d+/ });

  // Opening the page announces nothing; the slider's text names the entry and what happened.
  await expect(timeline.getByRole("button")).not.toHaveCount(0);
  const lastSeq = await slider.inputValue();
  await expect.poll(() => rowText(lastSeq)).not.toBe("…");
  expect(await slider.getAttribute("aria-valuetext")).toMatch(new RegExp(`, ${escape((await rowText(lastSeq))!)}$`));
  await expect(timeline.locator("button[aria-current=true]")).toHaveCount(1);
  await expect(page.locator(`[data-testid=trace-entry][data-seq="${lastSeq}"] > button`)).toHaveAttribute("aria-current", "true");
  await expect(announced).toHaveCount(0);

  // A row with the keyboard focus keeps it while the live tail adds entries, and their arrival is
  // not announced.
  const secondSeq = await page.getByTestId("trace-entry").nth(1).getAttribute("data-seq");
  const focused = page.locator(`[data-testid=trace-entry][data-seq="${secondSeq}"] > button`);
  await focused.focus();
  const before = await timeline.getByRole("button").count();
  await paint("40,60,220");
  await expect.poll(() => timeline.getByRole("button").count(), { timeout: 20_000 }).toBeGreaterThan(before);
  await expect(focused).toBeFocused();
  await expect(announced).toHaveCount(0);

  // ← from the timeline (the page-wide keys) moves the selection, and the move is announced: the
  // same words as the slider's, and the row's description.
  const newest = Number(await slider.inputValue());
  expect(newest).toBeGreaterThan(Number(lastSeq));
  await page.keyboard.press("ArrowLeft");
  await expect(slider).toHaveValue(String(newest - 1));
  await expect(announced).toHaveCount(1);
  const seq = String(newest - 1);
  await expect(announced).toHaveText((await slider.getAttribute("aria-valuetext"))!);
  await expect(announced).toContainText((await rowText(seq))!);
  await expect(page.locator(`[data-testid=trace-entry][data-seq="${seq}"] > button`)).toHaveAttribute("aria-current", "true");
  await expect(focused).toBeFocused();
  // New entries arriving while an entry is selected change nothing that is said.
  const said = await announced.textContent();
  await paint("230,210,40");
  await expect.poll(() => timeline.getByRole("button").count(), { timeout: 20_000 }).toBeGreaterThan(before + 1);
  await expect(announced).toHaveText(said!);
  await expect(focused).toBeFocused();

  await api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
