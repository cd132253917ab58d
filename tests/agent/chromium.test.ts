// The real target: Chromium under fluxbox. Clicks, keys and 1,000 typed characters must reach a
// page as trusted events; the page's own counters are read over CDP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import WebSocket from "ws";
import { batch, cleanup, display, freePort, startAgent, startFluxbox, startXvfb, track, until, type Agent } from "./harness";

const D = display(159);
let agent: Agent;
let cdpPort: number;
let ws: WebSocket;
let nextId = 1;
let browserPid = 0;
/** How many times the heavy typing tests repeat: a few in `npm test`, 20 in `npm run test:stress`. */
const REPEAT = Number(process.env.HOLM_TEST_REPEAT ?? 2);

const PAGE = `<!doctype html><html><body style="margin:0">
<textarea id="t" style="position:fixed;inset:0;width:100vw;height:100vh;font-size:14px"></textarea>
<script>
  window.stats = { clicks: 0, dbl: 0, keys: 0, untrusted: 0, wheel: 0 };
  const s = window.stats;
  addEventListener("click", (e) => { s.clicks++; if (!e.isTrusted) s.untrusted++; }, true);
  addEventListener("dblclick", () => s.dbl++, true);
  window.downs = [];
  addEventListener("mousedown", (e) => window.downs.push({ detail: e.detail, t: e.timeStamp, x: e.clientX }), true);
  addEventListener("keydown", (e) => { s.keys++; if (!e.isTrusted) s.untrusted++; }, true);
  addEventListener("wheel", () => s.wheel++, true);
  // A textarea gives Tab to focus navigation; keep it as text so every typed character shows.
  document.getElementById("t").addEventListener("keydown", (e) => {
    if (e.key !== "Tab") return;
    e.preventDefault();
    e.target.setRangeText("\t", e.target.selectionStart, e.target.selectionEnd, "end");
  });
</script></body></html>`;

async function evaluate<T>(expression: string): Promise<T> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const onMsg = (data: WebSocket.RawData) => {
      const msg = JSON.parse(String(data));
      if (msg.id !== id) return;
      ws.off("message", onMsg);
      if (msg.result?.exceptionDetails) reject(new Error(JSON.stringify(msg.result.exceptionDetails)));
      else resolve(msg.result.result.value as T);
    };
    ws.on("message", onMsg);
    ws.send(JSON.stringify({ id, method: "Runtime.evaluate", params: { expression, returnByValue: true } }));
  });
}

beforeAll(async () => {
  await startXvfb(D);
  await startFluxbox(D);
  cdpPort = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "holm-chromium-"));
  fs.writeFileSync(path.join(dir, "page.html"), PAGE);
  const browser = track(
    spawn(
      "chromium",
      [
        "--no-sandbox", "--test-type", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
        `--user-data-dir=${path.join(dir, "profile")}`, `--remote-debugging-port=${cdpPort}`, "--start-maximized",
        `file://${path.join(dir, "page.html")}`,
      ],
      { env: { ...process.env, DISPLAY: `:${D}` }, stdio: "ignore", detached: true },
    ),
  );
  browserPid = browser.pid!;
  agent = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_CDP_PORT_BASE: String(cdpPort) });
  const page = await until(async () => {
    const list = (await (await fetch(`http://127.0.0.1:${cdpPort}/json/list`)).json()) as Array<{ type: string; url: string; webSocketDebuggerUrl: string }>;
    return list.find((t) => t.type === "page" && t.url.endsWith("page.html"));
  }, "chromium page", 30_000, 200);
  ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((r, j) => ws.once("open", r).once("error", j));
  await until(() => evaluate<boolean>("document.readyState === 'complete' && !!window.stats"), "page ready", 10_000);
});
afterAll(async () => {
  ws?.close();
  await cleanup();
});

describe("chromium", () => {
  it("health sees its CDP endpoint", async () => {
    const h = await (await fetch(`${agent.url}/health`)).json();
    expect(h.screens[0]).toMatchObject({ x: true, cdp: true });
  });

  it("awaits the browser window, focuses it, and clicks reach the page as trusted events", async () => {
    const r = await batch(agent, 0, {
      actions: [
        { type: "await_window", what: { class: "chromium", within_ms: 20_000 } },
        { type: "wait_still", settle_ms: 300, within_ms: 10_000 },
      ],
    });
    expect(r.results[0].ok, JSON.stringify(r.results[0])).toBe(true);
    const win = r.results[0].window;
    const focus = await batch(agent, 0, { actions: [{ type: "on_window", window: win.id, what: { do: "focus" } }] });
    expect(focus.results[0].ok).toBe(true);
    const at = { x: win.x + Math.floor(win.width / 2), y: win.y + Math.floor(win.height / 2) };
    const before = await evaluate<{ clicks: number }>("window.stats");
    const c = await batch(agent, 0, {
      actions: [
        { type: "click", at },
        { type: "click", at: { x: at.x + 5, y: at.y }, motion: "human", seed: 7 },
        { type: "double_click", at },
        { type: "scroll", at, dy: 2 },
      ],
    });
    expect(c.stopped_at).toBeNull();
    const after = await until(async () => {
      const st = await evaluate<{ clicks: number; dbl: number; untrusted: number; wheel: number }>("window.stats");
      return st.clicks - before.clicks >= 4 && st.wheel >= 1 ? st : null;
    }, "four clicks and a wheel tick", 5000);
    expect(after.clicks - before.clicks).toBe(4);
    expect(after.dbl).toBe(1);
    expect(after.wheel).toBeGreaterThanOrEqual(1);
    expect(after.untrusted).toBe(0);
    expect(await evaluate<boolean>("document.activeElement.id === 't'")).toBe(true);
  });

  it("a click followed at once by a double-click 40 px away: every dblclick arrives, 20 of 20", async () => {
    // Two presses in the same millisecond were one press to Chromium (it skips a press stamped
    // like the one before when counting clicks), so the double-click lost its dblclick.
    const win = (await batch(agent, 0, { actions: [{ type: "await_window", what: { class: "chromium", within_ms: 20_000 } }] }))
      .results[0].window;
    const a = { x: win.x + Math.floor(win.width / 2), y: win.y + Math.floor(win.height / 2) };
    const b = { x: a.x + 40, y: a.y };
    await evaluate("window.downs = []; window.stats.dbl = 0");
    const actions = [];
    // The click goes at once before each double-click (what this test is about); a short wait
    // after each one, before the next pair: a click at once after a double-click elsewhere is
    // another case, and under very heavy load Chromium once put that double-click's second press
    // where the click went (the agent now lets the second press fall due before a step ends).
    for (let i = 0; i < 20; i++) actions.push({ type: "click", at: a }, { type: "double_click", at: b }, { type: "wait", ms: 50 });
    const r = await batch(agent, 0, { actions });
    expect(r.stopped_at).toBeNull();
    const downs = await until(async () => {
      const d = await evaluate<Array<{ detail: number; t: number; x: number }>>("window.downs");
      return d.length >= 60 ? d : null;
    }, "60 presses", 10_000);
    // Each double-click counts as a first and a second press. (The click just before it is not
    // checked: a press within 500 ms of the last double-click may count as a third.)
    const pairs = Array.from({ length: 20 }, (_, i) => [downs[3 * i + 1].detail, downs[3 * i + 2].detail]);
    // On a mismatch, each press as Chromium saw it (click count, x, ms after the one before): a
    // run under very heavy load once saw one double-click as [1, 1] and the next as [2, 3].
    const seen = downs.map((d, i) => `${d.detail}@${d.x}+${i ? Math.round(d.t - downs[i - 1]!.t) : 0}ms`);
    expect(pairs, Array.from({ length: 20 }, (_, i) => seen.slice(3 * i, 3 * i + 3).join(" ")).join(" | ")).toEqual(
      Array.from({ length: 20 }, () => [1, 2]),
    );
    const dbl = await until(async () => {
      const n = await evaluate<number>("window.stats.dbl");
      return n >= 20 ? n : null;
    }, "20 dblclicks", 5000).catch(() => evaluate<number>("window.stats.dbl"));
    expect(dbl).toBe(20);
  });

  it("types 1,000 characters, off-keymap ones included, and every one arrives", async () => {
    await evaluate("document.getElementById('t').value = ''");
    const unit = `Hello, wörld! $(rm -rf /) "quotes" 'single' \\ 中文 😀 ñ € \ttab\n`;
    let text = "";
    while (Array.from(text).length < 1000) text += unit;
    text = Array.from(text).slice(0, 1000).join("");
    const r = await batch(agent, 0, { actions: [{ type: "type", text }] });
    expect(r.results[0]).toMatchObject({ ok: true, typed: 1000 });
    // Wait until the textarea stops growing, then compare.
    let value = "";
    let stableSince = Date.now();
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && Date.now() - stableSince < 500) {
      const v = await evaluate<string>("document.getElementById('t').value");
      if (v !== value) {
        value = v;
        stableSince = Date.now();
      }
      await new Promise((r2) => setTimeout(r2, 50));
    }
    expect(value).toBe(text);
  });

  /** The textarea's value once it has stopped changing for `quietMs`. */
  async function settledValue(quietMs = 500, ms = 30_000): Promise<string> {
    let value = "";
    let stableSince = Date.now();
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && Date.now() - stableSince < quietMs) {
      const v = await evaluate<string>("document.getElementById('t').value");
      if (v !== value) {
        value = v;
        stableSince = Date.now();
      }
      await new Promise((r2) => setTimeout(r2, 50));
    }
    return value;
  }

  const distinctCjk = (n: number, from: number): string =>
    Array.from({ length: n }, (_, i) => String.fromCodePoint(0x4e00 + from + i)).join("");

  it(`types 2,000 distinct characters outside the layout, ${REPEAT} times, each character as asked`, { timeout: 600_000 }, async () => {
    for (let round = 0; round < REPEAT; round++) {
      await evaluate("document.getElementById('t').value = ''");
      // Another block each round: every round remaps keycodes the last one used.
      const text = distinctCjk(2000, (round % 4) * 2000);
      // The textarea fills the window: a click gives it the focus whatever ran before.
      const r = await batch(agent, 0, { actions: [{ type: "click", at: { x: 640, y: 400 } }, { type: "type", text }] });
      expect(r.results[1], JSON.stringify(r.results[1])).toMatchObject({ ok: true, typed: 2000 });
      const got = await until(async () => {
        const v = await evaluate<string>("document.getElementById('t').value");
        return [...v].length >= 2000 ? v : null;
      }, `round ${round}: 2,000 characters in the page`, 30_000);
      const [g, e] = [[...got], [...text]];
      const wrong = g.flatMap((ch, i) => (ch !== e[i] ? [`${i}: ${ch} (+${ch.codePointAt(0)! - e[i].codePointAt(0)!})`] : []));
      expect(wrong, `round ${round}: ${wrong.length} characters other than asked`).toEqual([]);
      expect(await settledValue(300)).toBe(text);
    }
  });

  it("waits for a browser that is not reading its events (stopped) before giving a keycode another character", async () => {
    await evaluate("document.getElementById('t').value = ''");
    const text = distinctCjk(400, 9000);
    process.kill(browserPid, "SIGSTOP");
    let settled = false;
    let pending: Promise<any>;
    try {
      pending = batch(agent, 0, { actions: [{ type: "click", at: { x: 640, y: 400 } }, { type: "type", text }] }).finally(() => (settled = true));
      await new Promise((r2) => setTimeout(r2, 1500));
      expect(settled, "the batch answered while the browser could not have handled its keys").toBe(false);
    } finally {
      process.kill(browserPid, "SIGCONT");
    }
    const r = await pending!;
    expect(r.results[1]).toMatchObject({ ok: true, typed: 400 });
    expect(await settledValue()).toBe(text);
  });

  it("types through the xdotool fallback too", async () => {
    const fallback = await startAgent({ HOLM_DISPLAY_BASE: String(D), HOLM_AGENT_INPUT: "xdotool" });
    await evaluate("document.getElementById('t').value = ''");
    const text = `fallback: wörld $(id) 中文 😀 ñ €\tend\n`;
    const r = await batch(fallback, 0, { actions: [{ type: "type", text }] });
    expect(r.results[0]).toMatchObject({ ok: true, via: "xdotool" });
    await until(async () => (await evaluate<string>("document.getElementById('t').value")) === text, "fallback text", 5000);
    fallback.proc.kill("SIGKILL");
  });

  it("presses chords in the page (select all, then delete)", async () => {
    const r = await batch(agent, 0, { actions: [{ type: "press", chord: "ctrl+a", then: "BackSpace" }] });
    expect(r.results[0].ok).toBe(true);
    await until(async () => (await evaluate<string>("document.getElementById('t').value")) === "", "empty textarea", 3000);
  });
});
