import net from "node:net";
import WebSocket from "ws";
import { agentAuthorization, agentFetchAs } from "./box-auth";
import { type TestServer, docker } from "./server";

// Reads a box's page from the outside through the agent's DevTools relay (/screens/N/cdp/…,
// signed as the server signs: images/README.md), so tests check what the page saw instead of
// trusting an action's result.

export async function boxIp(boxId: string): Promise<string> {
  const info = await docker.getContainer(`holm-${boxId}`).inspect();
  return Object.values(info.NetworkSettings.Networks)[0]!.IPAddress;
}

export class Page {
  private nextId = 1;
  private pending = new Map<number, (v: any) => void>();
  private constructor(private ws: WebSocket) {
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (msg.id && this.pending.has(msg.id)) {
        this.pending.get(msg.id)!(msg);
        this.pending.delete(msg.id);
      }
    });
  }

  static async open(server: Pick<TestServer, "env" | "stateDir">, boxId: string, screen = 0): Promise<Page> {
    const ip = await boxIp(boxId);
    const res = await agentFetchAs(server, boxId, ip, `/screens/${screen}/cdp/json/list`);
    if (res.status !== 200) throw new Error(`DevTools relay: ${res.status} ${await res.text()}`);
    const list = (await res.json()) as any[];
    const target = list.find((t) => t.type === "page");
    if (!target) throw new Error("no page target");
    // Chromium names itself at 127.0.0.1:(9222+n); the relay serves that path under /screens/n/cdp.
    const path = `/screens/${screen}/cdp${new URL(String(target.webSocketDebuggerUrl)).pathname}`;
    const ws = new WebSocket(`ws://${ip}:7070${path}`, { headers: { authorization: agentAuthorization(server, boxId, "GET", path) } });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    return new Page(ws);
  }

  /** A call's answer; one that never comes fails the call after 20 s, naming it, instead of hanging the test. */
  send(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`DevTools gave no answer to ${method} within 20 s`));
      }, 20_000);
      this.pending.set(id, (v) => (clearTimeout(timer), resolve(v)));
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async evaluate<T = unknown>(expression: string): Promise<T> {
    const res = await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (res.result?.exceptionDetails) throw new Error(JSON.stringify(res.result.exceptionDetails));
    return res.result?.result?.value as T;
  }

  /**
   * Navigates and waits until the new document (not the one it replaces, which is "complete"
   * too) has loaded and painted twice: Chromium may drop input sent before a new page paints.
   */
  async navigate(url: string) {
    await this.send("Page.enable");
    const { result } = await this.send("Page.navigate", { url });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const tree = await this.send("Page.getFrameTree");
      const loaded = tree.result?.frameTree?.frame?.loaderId === result?.loaderId;
      if (loaded && (await this.evaluate("document.readyState").catch(() => "")) === "complete") break;
      if (Date.now() > deadline) throw new Error(`${url.slice(0, 60)} did not load within 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await this.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))");
  }

  /** Screen coordinates of an element's centre (page chrome above the viewport included). */
  async centre(selector: string): Promise<{ x: number; y: number }> {
    return this.evaluate(`(() => {
      const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
      const top = window.screenY + (window.outerHeight - window.innerHeight);
      return { x: Math.round(window.screenX + r.left + r.width / 2), y: Math.round(top + r.top + r.height / 2) };
    })()`);
  }

  close() {
    this.ws.close();
  }
}

/** `expr`'s value in the box's front page, through its own DevTools (a fresh attach: tabs change), not /v1. */
export async function inFrontPage<T>(server: Pick<TestServer, "env" | "stateDir">, boxId: string, expr: string): Promise<T> {
  const p = await Page.open(server, boxId);
  try {
    return await p.evaluate<T>(expr);
  } finally {
    p.close();
  }
}

/**
 * A raw CDP socket (through the proxy or not): send(method, params, sessionId) resolves with the
 * whole answer ({result} or {error}); one that never comes fails after 20 s, naming the method.
 */
export function cdpSocket(ws: WebSocket) {
  let next = 1;
  const waiting = new Map<number, (m: any) => void>();
  ws.on("message", (d) => {
    const m = JSON.parse(String(d));
    if (typeof m.id === "number") waiting.get(m.id)?.(m);
  });
  return (method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<any> => {
    const id = next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (waiting.delete(id), reject(new Error(`DevTools gave no answer to ${method} within 20 s`))), 20_000);
      waiting.set(id, (m) => (clearTimeout(timer), waiting.delete(id), resolve(m)));
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  };
}

/** An upgrade over a raw connection the client keeps open after the answer: the answer's status. */
export function upgradeKeptOpen(wsUrl: string, held: net.Socket[]): Promise<number> {
  const url = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    const s = net.connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true }, () =>
      s.write(`GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`),
    );
    held.push(s);
    // Half-open: the server's end of the answer arrives, this side never ends its own.
    s.once("data", (d) => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(String(d))?.[1] ?? 0)));
    s.on("end", () => undefined);
    s.once("error", reject);
  });
}
