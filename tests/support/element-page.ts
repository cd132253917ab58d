import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { agentAuthorization, agentFetchAs } from "./box-auth";
import { boxIp } from "./cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "./server";
import { SITE, serveSite } from "./site";

// For the element tests: a box serving the fixture site, and the test's own Playwright attached
// to its Chromium through the agent's signed DevTools relay, to open pages and to check from the
// page itself what an element operation did (never only its answer).

export interface ElementBox {
  box: { id: string };
  browser: Browser;
  /** The box's front tab, seen by the test. */
  page: Page;
  /** A /v1 call under the box: status and JSON body. */
  call: (p: string, init?: RequestInit & { json?: unknown }) => Promise<{ status: number; body: any; ms: number }>;
  /** `POST …/page/element` with this body (and query). */
  op: (body: unknown, query?: string) => Promise<{ status: number; body: any; ms: number }>;
  snapshot: (query?: string) => Promise<{ status: number; body: any; ms: number }>;
  /** Opens a fixture page in the front tab and waits for its load. */
  open: (name: string) => Promise<void>;
}

/** `spec` is the box's (`{}`: the defaults, an X11 desktop; page-element.wayland.test.ts asks for Wayland). */
export async function elementBox(server: TestServer, spec: Record<string, unknown> = {}): Promise<ElementBox> {
  const box = await json(await server.api("/v1/boxes", { method: "POST", json: { spec } }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  expect(box.spec.desktop.server).toBe((spec.desktop as { server?: string } | undefined)?.server ?? "x11");
  await serveSite(server, box.id);
  const ip = await boxIp(box.id);
  const versionPath = "/screens/0/cdp/json/version";
  const version = (await (await agentFetchAs(server, box.id, ip, versionPath)).json()) as { webSocketDebuggerUrl: string };
  const wsPath = `/screens/0/cdp${new URL(version.webSocketDebuggerUrl).pathname}`;
  const browser = await chromium.connectOverCDP(`ws://${ip}:7070${wsPath}`, {
    headers: { authorization: agentAuthorization(server, box.id, "GET", wsPath) },
  });
  const page = browser.contexts()[0]!.pages()[0]!;
  const call: ElementBox["call"] = async (p, init) => {
    const t = performance.now();
    const res = await server.api(`/v1/boxes/${box.id}${p}`, init);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - t };
  };
  return {
    box,
    browser,
    page,
    call,
    op: (body, query = "") => call(`/page/element${query}`, { method: "POST", json: body }),
    snapshot: (query = "") => call(`/page/snapshot${query}`),
    open: async (name) => {
      // A navigation the box made for the test before (a click, history) reaches this connection
      // on its own path and can come after the answer did; Playwright then calls this goto
      // "interrupted by another navigation" to that older page. Once that late news is in, the
      // goto is the only navigation left, so a second try is the test's, not a mask.
      const url = `${SITE}/${name}`;
      await page.goto(url).catch(async (e: Error) => {
        if (!/interrupted by another navigation/.test(e.message)) throw e;
        await page.goto(url);
      });
    },
  };
}

/**
 * One server and one box for a test file, made before its tests and removed after them (even
 * when a test fails). The returned object is filled in by the time a test runs.
 */
export function useElementBox(spec: Record<string, unknown> = {}): { server: TestServer; eb: ElementBox } {
  const the = {} as { server: TestServer; eb: ElementBox };
  beforeAll(async () => {
    the.server = await startServer();
    the.eb = await elementBox(the.server, spec);
  });
  afterAll(async () => {
    await the.eb?.browser.close().catch(() => undefined);
    await the.server?.stop();
    await removeTestBoxes();
  });
  return the;
}

/** The ref of the listed element with this name. */
export function refOf(snap: { elements: { ref: string; name?: string }[] }, name: string): string {
  const e = snap.elements.find((x) => x.name === name);
  if (!e) throw new Error(`no element named "${name}" in ${JSON.stringify(snap.elements.map((x) => x.name))}`);
  return e.ref;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.floor(s.length / 2)]!);
}
