import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { cdpSocket } from "../support/cdp";
import { consoleClient } from "../support/console";
import { decodePng } from "../support/png";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { SITE, serveSite } from "../support/site";
import { until } from "../support/until";

// The takeover guard of the CDP proxy (docs/decisions/0011-cdp-proxy.md) against the commands
// the box's own Chromium offers beyond those the ADR names: each one here changes what the
// person sees or what their page can do (a DevTools window over their page, their page cut off
// the network, a popover forced open, the page scrolled to a search match, a highlight drawn
// over it by DOM.highlightRect, which Chromium hands on to the refused Overlay.highlightRect). During an exclusive
// takeover each must be answered with the takeover error, and the page must show no change;
// after give-back the same commands work, so what the test looks at is a real effect. And a
// person's takeover of one screen holds against a client of another screen ending its browser,
// which, crashed, stops the whole box (one that quits is started again).

let server: TestServer;
let box: any;
let key: { secret: string; id: string };

const asKey = (p: string, init: RequestInit = {}) => fetch(`${server.base}${p}`, { ...init, headers: { authorization: `Bearer ${key.secret}`, ...(init.headers ?? {}) } });

beforeAll(async () => {
  server = await startServer({ HOLM_STORAGE_BACKEND: "local", HOLM_TAKEOVER_GRACE_SECS: "60" });
  const c = consoleClient(server);
  const ada = await c.signUp("ada@example.com", "A");
  key = await c.createKey(ada, "agent");
  box = await json(await asKey("/v1/boxes", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  await serveSite(server, box.id);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("CDP commands of a current Chromium during an exclusive takeover", () => {
  it("opening DevTools, going offline, forcing a popover open, find-in-page and DOM highlights are refused, and the person's page does not change; after give-back they work", async () => {
    const res = await asKey(`/v1/boxes/${box.id}/cdp`, { method: "POST" });
    const cdp = await json(res);
    expect(res.status, JSON.stringify(cdp)).toBe(200);
    const ws = new WebSocket(cdp.ws_url);
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    const send = cdpSocket(ws);
    const takeover = `/v1/boxes/${box.id}/screens/0/takeover`;
    const devtoolsWindows = async () => ((await send("Target.getTargets")).result.targetInfos as any[]).filter((t) => t.url.startsWith("devtools://"));
    try {
      const page = ((await send("Target.getTargets")).result.targetInfos as any[]).find((t) => t.type === "page");
      const s = (await send("Target.attachToTarget", { targetId: page.targetId, flatten: true })).result.sessionId as string;
      const value = async (expression: string) => (await send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, s)).result?.result?.value;
      await send("Page.navigate", { url: `${SITE}/index.html` }, s);
      await until("the site's page", () => value("location.href + ' ' + document.readyState"), (v) => v === `${SITE}/index.html complete`);
      await value(`document.body.insertAdjacentHTML("beforeend", '<div id="pop" popover>POPOVER</div><div style="height:6000px"></div><p>FARAWAYWORD</p>'); scrollTo(0, 0); true`);
      await send("Network.enable", {}, s);
      await send("FindInPage.enable", {}, s);
      await send("DOM.enable", {}, s);
      expect(await send("Overlay.enable", {}, s)).toMatchObject({ result: {} });
      const root = (await send("DOM.getDocument", {}, s)).result.root.nodeId;
      const pop = (await send("DOM.querySelector", { nodeId: root, selector: "#pop" }, s)).result.nodeId;
      const offline = { offline: true, latency: 0, downloadThroughput: -1, uploadThroughput: -1 };
      const commands: [string, Record<string, unknown>, string?][] = [
        ["Target.openDevTools", { targetId: page.targetId }],
        ["Network.overrideNetworkState", offline, s],
        ["Network.emulateNetworkConditionsByRule", { matchedNetworkConditions: [{ urlPattern: "", ...offline }] }, s],
        ["DOM.forceShowPopover", { nodeId: pop, enable: true }, s],
        ["FindInPage.findFirst", { query: "FARAWAYWORD" }, s],
        ["DOM.highlightRect", { x: 0, y: 0, width: 4000, height: 4000, color: { r: 255, g: 0, b: 0, a: 1 } }, s],
      ];
      /** The middle of the screen the person sees (the page there is white), read from /v1's frame. */
      const middle = async () => {
        const frame = await json(await server.api(`/v1/boxes/${box.id}/screens/0/frame`));
        return decodePng(Buffer.from(frame.png_base64, "base64")).rgb(640, 500).join(",");
      };
      /** What the person would see change: a DevTools window, the page offline or unable to load, the popover, the scroll. */
      const looks = async () => ({
        devtools: (await devtoolsWindows()).length,
        online: await value("navigator.onLine"),
        fetch: await value(`fetch("/echo").then((r) => r.status, (e) => "failed: " + e.message)`),
        popover: await value(`document.getElementById("pop").matches(":popover-open")`),
        scrolled: await value("scrollY > 0"),
        middle: await middle(),
      });
      const untouched = { devtools: 0, online: true, fetch: 200, popover: false, scrolled: false, middle: "255,255,255" };
      expect(await looks()).toEqual(untouched);

      expect((await server.api(takeover, { method: "POST", json: { shared: false } })).status).toBe(200);
      const answers: Record<string, unknown> = {};
      for (const [method, params, session] of commands) answers[method] = (await send(method, params, session)).error?.message ?? "forwarded";
      await new Promise((r) => setTimeout(r, 500));
      expect(await looks()).toEqual(untouched);
      for (const [method] of commands) expect(answers[method], method).toMatch(new RegExp(`taken over screen 0 \\(exclusive takeover\\); ${method.replace(".", "\\.")} is refused`));

      // After give-back the same commands go through and do what they do (so `looks` sees them).
      expect((await server.api(takeover, { method: "DELETE" })).status).toBe(200);
      for (const [method, params, session] of commands) expect((await send(method, params, session)).error, method).toBeUndefined();
      const changed = await until("the commands' effects", looks, (l) => l.devtools > 0 && l.online === false && l.popover === true && l.scrolled === true && l.middle === "255,0,0");
      expect(changed.fetch).toMatch(/^failed/);
    } finally {
      await server.api(takeover, { method: "DELETE" });
      for (const t of await devtoolsWindows().catch(() => [])) await send("Target.closeTarget", { targetId: t.targetId }).catch(() => undefined);
      ws.terminate();
    }
  }, 90_000);

  it("while a person holds screen 0, a CDP client of screen 1 cannot end its browser (a crash would stop the box and the person's screen with it); after give-back it can", async () => {
    const made = await json(await asKey("/v1/boxes", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ spec: { desktop: { screens: 2 } } }) }));
    expect(made.state, JSON.stringify(made)).toBe("ready");
    const res = await asKey(`/v1/boxes/${made.id}/cdp?screen=1`, { method: "POST" });
    const cdp = await json(res);
    expect(res.status, JSON.stringify(cdp)).toBe(200);
    const ws = new WebSocket(cdp.ws_url);
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    const send = cdpSocket(ws);
    const takeover = `/v1/boxes/${made.id}/screens/0/takeover`;
    const state = async () => (await json(await asKey(`/v1/boxes/${made.id}`))).state;
    let again: WebSocket | undefined;
    try {
      expect((await server.api(takeover, { method: "POST", json: { shared: false } })).status).toBe(200);
      // Screen 1 is the agent's own: it still drives there.
      expect((await send("Browser.getVersion")).result?.product).toMatch(/Chrom/);
      const pages = ((await send("Target.getTargets")).result.targetInfos as any[]).filter((t) => t.type === "page");
      for (const [method, params] of [
        ["Browser.close", {}],
        ["Browser.crash", {}],
        ["Target.closeTarget", { targetId: pages[0].targetId }],
      ] as const) {
        const answer = await Promise.race([send(method, params), new Promise((r) => setTimeout(() => r("no answer"), 3000))]);
        await new Promise((r) => setTimeout(r, 2000));
        expect(await state(), method).toBe("ready");
        expect(JSON.stringify(answer), method).toMatch(/taken over screen 0 \(exclusive takeover\); \S+ ends this screen's browser, and with it the box/);
      }
      const close = await fetch(`${cdp.url}/json/close/${pages[0].targetId}`);
      expect(close.status).toBe(409);
      expect((await json(close)).message).toMatch(/screen 0.*may end this screen's browser, and with it the box/);
      await new Promise((r) => setTimeout(r, 2000));
      expect(await state()).toBe("ready");
      expect((await send("Browser.getVersion")).result?.product).toMatch(/Chrom/);

      expect((await server.api(takeover, { method: "DELETE" })).status).toBe(200);
      // After give-back: the browser it closes ends (its socket closes) and the box starts it
      // again (a kiosk, images/x11/entrypoint.sh); the browser it crashes stops the box.
      const closed = new Promise((r) => ws.once("close", r));
      await send("Browser.close").catch(() => undefined);
      await closed;
      const mint = async () => {
        const r = await asKey(`/v1/boxes/${made.id}/cdp?screen=1`, { method: "POST" });
        return r.status === 200 ? ((await json(r)).ws_url as string) : undefined;
      };
      const url = await until("a CDP address of screen 1's new browser", mint, (u) => u !== undefined);
      expect(await state()).toBe("ready");
      again = new WebSocket(url!);
      await new Promise((resolve, reject) => (again!.once("open", resolve), again!.once("error", reject)));
      const sendAgain = cdpSocket(again);
      expect((await sendAgain("Browser.getVersion")).result?.product).toMatch(/Chrom/);
      void sendAgain("Browser.crash").catch(() => undefined);
      await until("the box stopped by its browser's crash", state, (s) => s !== "ready");
    } finally {
      await server.api(takeover, { method: "DELETE" });
      ws.terminate();
      again?.terminate();
    }
  }, 90_000);
});
