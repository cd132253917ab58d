import http from "node:http";
import { type Browser, type Page, chromium } from "playwright-core";
import WebSocket from "ws";
import { agentAuthorization, agentFetchAs } from "../tests/support/box-auth";
import { boxIp } from "../tests/support/cdp";
import { SITE, serveSite } from "../tests/support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// The CDP proxy (issue 13): Playwright's page.click + page.screenshot through the proxy
// (connectOverCDP(url) of POST /v1/boxes/{id}/cdp) against the same Playwright attached directly
// to the box's DevTools (the agent's signed relay, as the server itself attaches: nothing else
// reaches a box's Chromium), in the same run, the two sides taking turns sample by sample on the
// same tab. Then the proxy's first byte: what connectOverCDP waits for first.

const N = Number(process.env.BENCH_N ?? 40);

const PAGE = `<!doctype html><title>Bench</title><body style="margin:0">
<button id="b" style="width:400px;height:120px">Add</button><p id="n">0</p>
<script>let k = 0; b.onclick = () => { n.textContent = String(++k); };</script></body>`;

async function directBrowser(server: TestServer, boxId: string): Promise<Browser> {
  const ip = await boxIp(boxId);
  const v = (await (await agentFetchAs(server, boxId, ip, "/screens/0/cdp/json/version")).json()) as { webSocketDebuggerUrl: string };
  const path = `/screens/0/cdp${new URL(v.webSocketDebuggerUrl).pathname}`;
  return chromium.connectOverCDP(`ws://${ip}:7070${path}`, { headers: { authorization: agentAuthorization(server, boxId, "GET", path) } });
}

/** Time from sending a GET on a fresh connection to the first byte of the answer (its status line). */
function httpFirstByte(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const req = http.get(url, { agent: false }, (res) => {
      const t = now() - t0;
      res.resume();
      res.on("end", () => resolve(t));
    });
    req.on("error", reject);
  });
}

/** Time from opening a WebSocket (fresh TCP connection) to its 101. */
function wsOpen(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once("open", () => {
      const t = now() - t0;
      ws.close();
      resolve(t);
    });
    ws.once("error", reject);
  });
}

export async function benchCdp() {
  const server = await startServer();
  const browsers: Browser[] = [];
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    await serveSite(server, box.id);
    await server.api(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: "/srv/site/bench-cdp.html", contents_base64: Buffer.from(PAGE).toString("base64") } });
    const cdp = await json(await server.api(`/v1/boxes/${box.id}/cdp`, { method: "POST" }));

    const proxied = await chromium.connectOverCDP(cdp.url);
    browsers.push(proxied);
    const direct = await directBrowser(server, box.id);
    browsers.push(direct);
    const viaProxy: Page = proxied.contexts()[0]!.pages()[0]!;
    await viaProxy.goto(`${SITE}/bench-cdp.html`);
    const viaDirect: Page = direct.contexts()[0]!.pages()[0]!;
    await viaDirect.waitForURL(/bench-cdp/);

    const step = async (p: Page) => {
      await p.click("#b");
      await p.screenshot();
    };
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 3; i++) {
      await step(viaProxy);
      await step(viaDirect);
    }
    for (let i = 0; i < N; i++) {
      let t0 = now();
      await step(viaProxy);
      a.push(now() - t0);
      t0 = now();
      await step(viaDirect);
      b.push(now() - t0);
    }
    const px = summarize("click + screenshot (through the proxy)", a);
    const dx = summarize("click + screenshot (direct, agent relay)", b);
    const ratio = px.median / dx.median;
    console.log(`  ratio ${ratio.toFixed(2)}× at the median, ${(px.p95 / dx.p95).toFixed(2)}× at p95; target median ≤ 1.15× (${ratio <= 1.15 ? "met" : "missed"})`);

    // connectOverCDP(url) first GETs <url>/json/version/, then opens the WebSocket it names.
    const first: number[] = [];
    const open: number[] = [];
    for (let i = 0; i < 3; i++) await httpFirstByte(`${cdp.url}/json/version/`);
    for (let i = 0; i < N; i++) first.push(await httpFirstByte(`${cdp.url}/json/version/`));
    for (let i = 0; i < N; i++) open.push(await wsOpen(cdp.ws_url));
    const fb = summarize("first byte of GET <url>/json/version/ (proxy)", first);
    summarize("WebSocket upgrade to 101 (proxy)", open);
    console.log(`  first byte: request sent on a new connection → first byte of the proxy's answer; target ≤ 50 ms (${fb.median <= 50 ? "met" : "missed"} at the median, p95 ${fb.p95.toFixed(1)} ms)`);
  } finally {
    for (const br of browsers) await br.close().catch(() => undefined);
    await server.stop();
    await removeTestBoxes();
  }
}
