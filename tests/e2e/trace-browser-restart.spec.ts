import { expect, test } from "@playwright/test";
import { signUpAndKey } from "../support/browser";
import { type TestServer, json } from "../support/server";
import { serverForSpec } from "../support/spec-server";
import { apiAs } from "../support/workspaces";

// A person reading the trace page of a box whose screen-1 browser an agent quit (ctrl+w on its
// last tab; the box started it again on a blank tab) reads why the pages went: a row of its own,
// in words, though nobody read the trace over /v1 (browser-restarts.server.ts).

let server: TestServer;
serverForSpec((s) => (server = s));

test("the trace page says that a screen's browser quit and was restarted", async ({ page }) => {
  const key = await signUpAndKey(page, server, "Rita");
  const api = apiAs(server, key);
  const box = await json(await api("/v1/boxes", { method: "POST", json: { spec: { desktop: { screens: 2, features: [] } } } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  try {
    const act = async (actions: unknown[]) => {
      const res = await api(`/v1/boxes/${box.id}/screens/1/actions`, { method: "POST", json: { actions } });
      expect(res.status, await res.clone().text()).toBe(200);
    };
    await act([{ type: "open_url", url: "data:text/html,<title>Agent page</title>", target: "current" }]);
    await expect.poll(async () => JSON.stringify(await json(await api(`/v1/boxes/${box.id}/screens/1/windows/active`)))).toMatch(/chromium/i);
    await act([{ type: "click", at: { x: 640, y: 500 } }, { type: "press", chord: "ctrl+w" }]);
    // Back on a blank tab: the box started it again.
    await expect
      .poll(async () => ((await json(await api(`/v1/boxes/${box.id}/pages`))).tabs ?? []).filter((t: any) => t.screen === 1).map((t: any) => t.url), { timeout: 20_000 })
      .toEqual(["about:blank"]);

    await page.goto(`${server.base}/boxes/${box.id}/trace`);
    const rows = page.getByTestId("trace-entry");
    await expect(rows.filter({ hasText: "screen 1's browser quit and was restarted" })).toHaveCount(1);
    await expect(rows.filter({ hasText: /browser/ })).toHaveCount(1);
  } finally {
    await api(`/v1/boxes/${box.id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => undefined);
  }
});
