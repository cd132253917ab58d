import { type Browser, chromium } from "playwright-core";
import { agentAuthorization, agentFetchAs } from "../tests/support/box-auth";
import { boxIp } from "../tests/support/cdp";
import { SITE, serveSite } from "../tests/support/site";
import { json, removeTestBoxes, startServer, type TestServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Pages by element through /v1 on a real box (issue 12), each side by side with Playwright
// driving the same page directly over CDP from the host, in the same run: the anchor is what
// an agent author would get with their own Playwright, so the ratio is what holm's HTTP hop,
// tab lookup and answer shaping cost. The direct side attaches the same way the server does
// (the agent's signed DevTools relay), since nothing else reaches a box's Chromium.

const N = Number(process.env.BENCH_N ?? 30);

/** 1,000 controls: inputs, selects, checkboxes and buttons in labelled rows. */
function controlsPage(): string {
  const rows: string[] = [];
  for (let i = 0; i < 250; i++) {
    rows.push(
      `<div><label>Field ${i} <input name=f${i}></label><select aria-label="Choice ${i}"><option>a</option><option>b</option></select>` +
        `<label><input type=checkbox> Check ${i}</label><button>Button ${i}</button></div>`,
    );
  }
  return `<!doctype html><title>Controls</title><body>${rows.join("")}</body>`;
}

/** A ~200 KB article with headings, paragraphs and links, inside nav and footer chrome. */
function articlePage(): string {
  const parts: string[] = [];
  for (let i = 0; parts.join("").length < 200_000; i++) {
    parts.push(`<h2>Section ${i}</h2><p>${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(12)}<a href="/s${i}">link ${i}</a></p>`);
  }
  return `<!doctype html><title>Article</title><body><nav><a href="/">Home</a> <a href="/about">About</a></nav><article><h1>A long article</h1>${parts.join("")}</article><footer>Footer</footer></body>`;
}

const FORM_PAGE = `<!doctype html><title>Form</title><label>Email <input id=email></label><button onclick="document.title='sent'">Send</button>`;

async function directBrowser(server: TestServer, boxId: string): Promise<Browser> {
  const ip = await boxIp(boxId);
  const v = (await (await agentFetchAs(server, boxId, ip, "/screens/0/cdp/json/version")).json()) as { webSocketDebuggerUrl: string };
  const path = `/screens/0/cdp${new URL(v.webSocketDebuggerUrl).pathname}`;
  return chromium.connectOverCDP(`ws://${ip}:7070${path}`, { headers: { authorization: agentAuthorization(server, boxId, "GET", path) } });
}

async function time(fn: () => Promise<unknown>, n = N): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < 3; i++) await fn();
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await fn();
    out.push(now() - t0);
  }
  return out;
}

const verdict = (ok: boolean) => (ok ? "met" : "missed");

export async function benchPages() {
  const server = await startServer();
  let browser: Browser | undefined;
  try {
    const box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    await serveSite(server, box.id);
    const put = async (name: string, html: string) =>
      server.api(`/v1/boxes/${box.id}/files`, { method: "PUT", json: { path: `/srv/site/${name}`, contents_base64: Buffer.from(html).toString("base64") } });
    await put("bench-controls.html", controlsPage());
    await put("bench-article.html", articlePage());
    await put("bench-form.html", FORM_PAGE);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await server.api(`/v1/boxes/${box.id}${path}`, { method, json: body });
      const out = await json(res);
      if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
      return out;
    };
    const batch = (actions: unknown[]) => api("POST", "/screens/0/actions", { actions });

    browser = await directBrowser(server, box.id);
    const ctx = browser.contexts()[0]!;
    const front = async () => {
      const tabs = (await api("GET", "/pages")).tabs ?? (await api("GET", "/pages"));
      const id = (Array.isArray(tabs) ? tabs : [])[0]?.id;
      for (const p of ctx.pages()) {
        const s = await ctx.newCDPSession(p);
        const info = (await s.send("Target.getTargetInfo")) as { targetInfo: { targetId: string } };
        await s.detach();
        if (info.targetInfo.targetId === id) return p;
      }
      throw new Error("the front tab is not among Playwright's pages");
    };

    // Snapshot of a 1,000-control page.
    await batch([{ type: "open_url", url: `${SITE}/bench-controls.html` }]);
    const controls = await front();
    const snapApi = summarize("snapshot, 1,000 controls (/v1 page/snapshot)", await time(() => api("GET", "/page/snapshot")));
    const snapDirect = summarize("snapshot, 1,000 controls (Playwright direct)", await time(() => controls.ariaSnapshot({ mode: "ai" })));
    console.log(`  ratio ${(snapApi.median / snapDirect.median).toFixed(2)}× direct; target p50 ≤ 150 ms and ≤ 1.2× (${verdict(snapApi.median <= 150 && snapApi.median <= 1.2 * snapDirect.median)})`);

    // Element click round trip, by ref.
    const snap = await api("GET", "/page/snapshot");
    const button = (snap.elements as { ref: string; role: string; name?: string }[]).find((e) => e.role === "button" && e.name === "Button 3");
    if (!button) throw new Error("no Button 3 in the snapshot");
    const clickApi = summarize("element click by ref (/v1 page/element)", await time(() => api("POST", "/page/element", { op: "click", query: button.ref })));
    const clickDirect = summarize("element click (Playwright direct, getByRef)", await time(() => controls.getByRef(button.ref).click()));
    console.log(`  ratio ${(clickApi.median / clickDirect.median).toFixed(2)}× direct; target p50 ≤ 60 ms (${verdict(clickApi.median <= 60)})`);

    // read of a 200 KB article.
    await batch([{ type: "open_url", url: `${SITE}/bench-article.html` }]);
    const article = await front();
    const readApi = summarize("read 200 KB article as markdown (/v1 page)", await time(() => api("GET", "/page?format=markdown")));
    const readDirect = summarize("innerText of the article (Playwright direct)", await time(() => article.evaluate(() => document.body.innerText)));
    console.log(`  ratio ${(readApi.median / readDirect.median).toFixed(2)}× direct innerText; target ≤ 100 ms (${verdict(readApi.median <= 100)})`);

    // One batch: open + wait_for + fill + click + snapshot, against the same five calls direct.
    const url = `${SITE}/bench-form.html`;
    const batchApi = summarize(
      "batch open+wait_for+fill+click+snapshot (/v1)",
      await time(
        () =>
          batch([
            { type: "open_url", url, target: "current" },
            { type: "on_page", what: { op: "wait_for", query: "Send" } },
            { type: "on_page", what: { op: "fill", query: "Email", text: "a@b.c" } },
            { type: "on_page", what: { op: "click", query: "Send" } },
            { type: "snapshot" },
          ]),
        15,
      ),
    );
    const formPage = await front();
    const batchDirect = summarize(
      "the same five calls (Playwright direct)",
      await time(async () => {
        await formPage.goto(url, { waitUntil: "domcontentloaded" });
        await formPage.getByText("Send").waitFor();
        await formPage.getByLabel("Email").fill("a@b.c");
        await formPage.getByRole("button", { name: "Send" }).click();
        await formPage.ariaSnapshot({ mode: "ai" });
      }, 15),
    );
    console.log(`  ratio ${(batchApi.median / batchDirect.median).toFixed(2)}× direct; target ≤ 1.2× (${verdict(batchApi.median <= 1.2 * batchDirect.median)})`);
  } finally {
    await browser?.close().catch(() => undefined);
    await server.stop();
    await removeTestBoxes();
  }
}
