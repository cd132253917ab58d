import { type Browser, chromium } from "playwright-core";
import { agentAuthorization, agentFetchAs } from "../tests/support/box-auth";
import { boxIp } from "../tests/support/cdp";
import { SITE, serveSite } from "../tests/support/site";
import { json, removeTestBoxes, startServer, type TestServer } from "../tests/support/server";
import { now, summarize } from "./stats";

// Pages by element through /v1 on a real box (issue 12), each side by side with Playwright
// driving the same page directly over CDP from the host, in the same run, the two sides taking
// turns sample by sample: the anchor is what an agent author would get with their own
// Playwright, so the ratio is what holm's HTTP hop, tab lookup, ref checks and answer shaping
// cost. The direct side attaches the same way the server does (the agent's signed DevTools
// relay), since nothing else reaches a box's Chromium.

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

interface Pair {
  name: string;
  api: () => Promise<unknown>;
  direct: () => Promise<unknown>;
  /** Untimed, before every sample of either side (the same change for both). */
  before?: () => Promise<unknown>;
  /**
   * Each side's samples in a block of their own, not in turns: for an operation that changes the
   * page, whose turns would change it behind the other side's back (the server would then find
   * its kept snapshot stale before every sample, which is not what the pair measures).
   */
  blocks?: boolean;
}

/**
 * Times both sides of a pair in turns (a /v1 sample, then a direct one, and so on) so that both
 * see the same load on a shared machine, after a few untimed rounds of each.
 */
async function pair(p: Pair, n = N): Promise<{ api: ReturnType<typeof summarize>; direct: ReturnType<typeof summarize> }> {
  const api: number[] = [];
  const direct: number[] = [];
  const one = async (fn: () => Promise<unknown>, into?: number[]) => {
    await p.before?.();
    const t0 = now();
    await fn();
    into?.push(now() - t0);
  };
  const sides: [() => Promise<unknown>, number[]][] = [
    [p.api, api],
    [p.direct, direct],
  ];
  for (const group of p.blocks ? sides.map((side) => [side]) : [sides]) {
    for (let i = 0; i < 3; i++) for (const [fn] of group) await one(fn);
    for (let i = 0; i < n; i++) for (const [fn, into] of group) await one(fn, into);
  }
  return { api: summarize(`${p.name} (/v1)`, api), direct: summarize(`${p.name} (Playwright direct)`, direct) };
}

const verdict = (ok: boolean) => (ok ? "met" : "missed");

/** The ref Playwright's own AI snapshot gives a role and name (what an agent author would use). */
function directRef(yaml: string, role: string, name: string): string {
  const line = yaml.split("\n").find((l) => l.includes(`${role} "${name}"`) && /\[ref=/.test(l));
  const ref = line && /\[ref=([^\]]+)\]/.exec(line)?.[1];
  if (!ref) throw new Error(`no ${role} "${name}" in Playwright's snapshot`);
  return ref;
}

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

    const ratio = (r: { api: { median: number }; direct: { median: number } }) => r.api.median / r.direct.median;
    const table: string[] = [];
    const row = (name: string, r: Awaited<ReturnType<typeof pair>>, target: string, met?: boolean) => {
      const ms = (x: { median: number; p95: number }) => `${x.median.toFixed(0)} / ${x.p95.toFixed(0)}`;
      table.push(`| ${name} | ${ms(r.api)} | ${ms(r.direct)} | ${ratio(r).toFixed(2)}× | ${target}${met === undefined ? "" : ` (${verdict(met)})`} |`);
    };

    // Snapshot of a 1,000-control page. Unchanged: the server answers from the snapshot it kept,
    // its page watcher saying nothing changed since. Changed: a checkbox is toggled (by a script,
    // untimed) before every sample of both sides, so the server takes a new snapshot each time.
    await batch([{ type: "open_url", url: `${SITE}/bench-controls.html` }]);
    const controls = await front();
    const toggle = () => controls.evaluate(() => document.querySelectorAll<HTMLInputElement>("input[type=checkbox]")[0]!.click());
    const snapDirect = () => controls.ariaSnapshot({ mode: "ai" });
    const snap = await pair({ name: "snapshot, 1,000 controls, unchanged", api: () => api("GET", "/page/snapshot"), direct: snapDirect });
    console.log(`  ratio ${ratio(snap).toFixed(2)}× direct; target p50 ≤ 150 ms and ≤ 1.2× (${verdict(snap.api.median <= 150 && ratio(snap) <= 1.2)})`);
    row("snapshot, 1,000 controls, unchanged", snap, "p50 ≤ 150 ms, ≤ 1.2×", snap.api.median <= 150 && ratio(snap) <= 1.2);
    const snapChanged = await pair({ name: "snapshot, 1,000 controls, changed", api: () => api("GET", "/page/snapshot"), direct: snapDirect, before: toggle });
    console.log(`  ratio ${ratio(snapChanged).toFixed(2)}× direct; target p50 ≤ 150 ms and ≤ 1.2× (${verdict(snapChanged.api.median <= 150 && ratio(snapChanged) <= 1.2)})`);
    row("snapshot, 1,000 controls, changed", snapChanged, "p50 ≤ 150 ms, ≤ 1.2×", snapChanged.api.median <= 150 && ratio(snapChanged) <= 1.2);

    // Element click round trip by ref, the ref from a snapshot on each side (the direct side's
    // from its own Playwright snapshot, as an agent author would). A button that does nothing
    // (the page does not change: no snapshot after), and a checkbox (it does: one after, for `changed`).
    const refOf = async (role: string, name: string) => {
      const elements = (await api("GET", "/page/snapshot")).elements as { ref: string; role: string; name?: string }[];
      const e = elements.find((x) => x.role === role && x.name === name);
      if (!e) throw new Error(`no ${role} "${name}" in the snapshot`);
      return { api: e.ref, direct: directRef(await controls.ariaSnapshot({ mode: "ai" }), role, name) };
    };
    const button = await refOf("button", "Button 3");
    const click = await pair({
      name: "click by ref, 1,000 controls, no change",
      api: () => api("POST", "/page/element", { op: "click", query: button.api }),
      direct: () => controls.getByRef(button.direct).click(),
    });
    console.log(`  ratio ${ratio(click).toFixed(2)}× direct; target p50 ≤ 60 ms (${verdict(click.api.median <= 60)})`);
    row("click by ref, 1,000 controls, no change", click, "p50 ≤ 60 ms", click.api.median <= 60);
    const checkbox = await refOf("checkbox", "Check 5");
    const check = await pair({
      name: "click a checkbox by ref, 1,000 controls",
      blocks: true,
      api: () => api("POST", "/page/element", { op: "click", query: checkbox.api }),
      direct: () => controls.getByRef(checkbox.direct).click(),
    });
    console.log(`  ratio ${ratio(check).toFixed(2)}× direct; target p50 ≤ 60 ms (${verdict(check.api.median <= 60)})`);
    row("click a checkbox by ref, 1,000 controls", check, "p50 ≤ 60 ms", check.api.median <= 60);

    // The same on an ordinary page: the small form, whose Send button changes the page (its title).
    await batch([{ type: "open_url", url: `${SITE}/bench-form.html` }]);
    const form = await front();
    const sendApi = ((await api("GET", "/page/snapshot")).elements as { ref: string; name?: string }[]).find((e) => e.name === "Send")!.ref;
    const sendDirect = directRef(await form.ariaSnapshot({ mode: "ai" }), "button", "Send");
    const formClick = await pair({
      name: "click by ref, small form",
      blocks: true,
      api: () => api("POST", "/page/element", { op: "click", query: sendApi }),
      direct: () => form.getByRef(sendDirect).click(),
    });
    console.log(`  ratio ${ratio(formClick).toFixed(2)}× direct; target p50 ≤ 60 ms (${verdict(formClick.api.median <= 60)})`);
    row("click by ref, small form", formClick, "p50 ≤ 60 ms", formClick.api.median <= 60);

    // read of a 200 KB article.
    await batch([{ type: "open_url", url: `${SITE}/bench-article.html` }]);
    const article = await front();
    const read = await pair({
      name: "read 200 KB article (markdown; direct: innerText)",
      api: () => api("GET", "/page?format=markdown"),
      direct: () => article.evaluate(() => document.body.innerText),
    });
    console.log(`  ratio ${ratio(read).toFixed(2)}× direct innerText; target ≤ 100 ms (${verdict(read.api.median <= 100)})`);
    row("read 200 KB article (direct: innerText)", read, "≤ 100 ms", read.api.median <= 100);

    // One batch: open + wait_for + fill + click + snapshot, against the same five calls direct.
    const url = `${SITE}/bench-form.html`;
    await batch([{ type: "open_url", url, target: "current" }]);
    const formPage = await front();
    const five = await pair(
      {
        name: "batch open+wait_for+fill+click+snapshot",
        api: () =>
          batch([
            { type: "open_url", url, target: "current" },
            { type: "on_page", what: { op: "wait_for", query: "Send" } },
            { type: "on_page", what: { op: "fill", query: "Email", text: "a@b.c" } },
            { type: "on_page", what: { op: "click", query: "Send" } },
            { type: "snapshot" },
          ]),
        direct: async () => {
          await formPage.goto(url, { waitUntil: "domcontentloaded" });
          await formPage.getByText("Send").waitFor();
          await formPage.getByLabel("Email").fill("a@b.c");
          await formPage.getByRole("button", { name: "Send" }).click();
          await formPage.ariaSnapshot({ mode: "ai" });
        },
      },
      15,
    );
    console.log(`  ratio ${ratio(five).toFixed(2)}× direct; target ≤ 1.2× (${verdict(ratio(five) <= 1.2)})`);
    row("batch open+wait_for+fill+click+snapshot", five, "≤ 1.2×", ratio(five) <= 1.2);
    // The batch's first step alone, done by the in-box agent (it also waits for the new document
    // to paint, so that pixel input right after it is not lost), against Playwright's goto.
    const open = await pair(
      {
        name: "batch of open_url alone (goto: domcontentloaded)",
        api: () => batch([{ type: "open_url", url, target: "current" }]),
        direct: () => formPage.goto(url, { waitUntil: "domcontentloaded" }),
      },
      15,
    );
    console.log(`  ratio ${ratio(open).toFixed(2)}× direct (part of the batch above)`);
    row("batch of open_url alone (direct: goto)", open, "part of the batch");
    console.log(["", "| pages | /v1 p50 / p95 ms | direct p50 / p95 ms | ratio | target |", "| --- | --- | --- | --- | --- |", ...table].join("\n"));
  } finally {
    await browser?.close().catch(() => undefined);
    await server.stop();
    await removeTestBoxes();
  }
}
