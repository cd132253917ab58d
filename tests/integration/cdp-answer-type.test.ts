import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/browser";
import { type Person, consoleClient } from "../support/console";
import { type TestServer, execIn, json, removeTestBoxes, startServer } from "../support/server";
import { until } from "../support/until";

// The DevTools HTTP endpoints (`/v1/cdp/{token}/json…`) answer on the console's own origin with
// what the box's side of them sent. A program in the box can put its own server where Chromium's
// DevTools listen (here: root swaps /usr/bin/chromium for one, and the box is stopped and resumed);
// had its content type gone through, a link to that URL, opened by a signed-in person, would run
// the box's script as the console (the person's session, their keys, their workspace). Its status
// is passed on too, so one no answer with a body can carry must not make the route fail (a 500).

let server: TestServer;
let ada: Person;
let key: { secret: string; id: string };
let boxId = "";
/** The DevTools URL of the box (a token minted before the swap). */
let cdpUrl = "";

/** What the box's own "DevTools" answer to everything: a page with a script. */
const FAKE_DEVTOOLS = String.raw`
require("http").createServer((q, s) => {
  const status = { "/json/list": 204, "/json/protocol": 999 }[q.url] ?? 200;
  s.writeHead(status, { "content-type": "text/html; charset=utf-8" });
  s.end('<!doctype html><title>devtools</title><script>document.title = "ran as " + location.origin</script><p>box page</p>');
}).listen(9222, "127.0.0.1");
setInterval(() => {}, 1 << 30);
`;

const asKey = (p: string, init: RequestInit = {}) =>
  fetch(`${server.base}${p}`, { ...init, headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json", ...(init.headers ?? {}) } });

async function boxState(): Promise<string> {
  return (await json(await asKey(`/v1/boxes/${boxId}`))).state;
}

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  const c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
  key = await c.createKey(ada, "agent");
  const box = await json(await asKey("/v1/boxes", { method: "POST", body: "{}" }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  boxId = box.id;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("the DevTools HTTP relay", () => {
  it("answers as JSON whatever the box's side says it is, so a box's page never runs as the console", async () => {
    // A token minted while Chromium still answers (minting reads its /json/version).
    const minted = await json(await asKey(`/v1/boxes/${boxId}/cdp`, { method: "POST" }));
    expect(minted.url, JSON.stringify(minted)).toMatch(/\/v1\/cdp\//);
    cdpUrl = minted.url;
    // Root in the box: Chromium's launcher now starts the fake DevTools instead.
    const swap = await execIn(boxId, [
      "sh",
      "-c",
      `cat > /tmp/fake-devtools.js <<'EOF'\n${FAKE_DEVTOOLS}\nEOF\nprintf '#!/bin/sh\\nexec node /tmp/fake-devtools.js\\n' > /usr/bin/chromium && chmod +x /usr/bin/chromium`,
    ]);
    expect(swap.code, swap.out).toBe(0);
    expect((await asKey(`/v1/boxes/${boxId}/stop`, { method: "POST", body: "{}" })).status).toBe(200);
    const resumed = await asKey(`/v1/boxes/${boxId}/resume`, { method: "POST", body: "{}" });
    expect(resumed.status, await resumed.clone().text()).toBe(200);
    await until("the box ready again", boxState, (s) => s === "ready", 90_000);

    const url = `${minted.url}/json/version`;
    // What the person who follows the link sees: the box's answer as text, no script run.
    const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
    try {
      const context = await browser.newContext();
      const [name, ...value] = ada.cookie.split(";")[0]!.split("=");
      await context.addCookies([{ name: name!, value: value.join("="), url: server.base }]);
      const page = await context.newPage();
      await page.goto(url);
      await page.waitForTimeout(300);
      expect(await page.title()).not.toMatch(/^ran as /);
      await expect.poll(() => page.locator("body").innerText()).toContain("<script>");
    } finally {
      await browser.close();
    }

    // The box's bytes are passed on as they are; only their type is the server's.
    const res = await fetch(url);
    expect(await res.text()).toContain("<script>");
    expect(res.headers.get("content-type")).toBe("application/json; charset=UTF-8");
  }, 180_000);

  it("a status no HTTP answer with a body can have (204, 999) is the box's transport failing (502), never a 500", async () => {
    expect(cdpUrl).not.toBe("");
    for (const rest of ["/json/list", "/json/protocol"]) {
      const res = await fetch(`${cdpUrl}${rest}`);
      const body = await json(res);
      expect([rest, res.status, body.code, typeof body.retryable]).toEqual([rest, 502, "transport", "boolean"]);
      expect(body.message).toMatch(/DevTools answered with status (204|999)/);
    }
    // The box is still served: /json/version answers (as JSON).
    expect((await fetch(`${cdpUrl}/json/version`)).status).toBe(200);
  });
});
