import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodePng } from "../support/png";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The dock on a Wayland box (seed 002 `dock`, issue 18, ADR 0030): waybar, not tint2 (an X11
// client), 30 px at the bottom that windows leave free, a launcher per spec.apps entry that a
// click on the screen starts, and the open windows. The X11 dock: spec-apps.test.ts. And a fork
// of a Wayland box (seed 001): a new Wayland box that replays the trace's batches.

let server: TestServer;
let box: any;

// xeyes (Debian's x11-apps) through XWayland.
const APPS = { eyes: { packages: ["x11-apps"], argv: ["xeyes", "-geometry", "240x180+500+200"], title: "Eyes", window_class: "XEyes" } };

beforeAll(async () => {
  server = await startServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

async function batch(actions: unknown[], extra: Record<string, unknown> = {}): Promise<any> {
  const res = await server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions, ...extra } });
  const body = await json(res);
  expect(res.status, JSON.stringify(body).slice(0, 600)).toBe(200);
  return body;
}

const windowsOf = async (klass: string) => ((await batch([{ type: "windows" }])).windows as any[]).filter((w) => w.class.toLowerCase() === klass.toLowerCase());

describe("Wayland boxes: the dock, and a fork", () => {
  it("launches with waybar at the bottom, which windows leave free", async () => {
    const res = await server.api("/v1/boxes", { method: "POST", json: { spec: { desktop: { server: "wayland", features: ["dock", "x11_apps"] }, apps: APPS } } });
    box = await json(res);
    expect(res.status, JSON.stringify(box).slice(0, 600)).toBe(200);
    expect(box.spec.desktop).toMatchObject({ server: "wayland", features: ["dock", "x11_apps"] });
    const ps = await json(await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["ps", "-eo", "user:8,comm"] } }));
    expect(ps.stdout).toMatch(/desk\s+waybar/);
    expect(ps.stdout).not.toMatch(/tint2/);
    // Chromium's window ends above the dock, whose 30 px are its dark grey.
    await expect.poll(async () => (await windowsOf("chromium"))[0]?.height, { timeout: 15_000 }).toBe(box.spec.desktop.height - 30);
    const out = await batch([{ type: "capture", what: { region: { x: 600, y: box.spec.desktop.height - 30, width: 200, height: 30 } } }]);
    const png = decodePng(Buffer.from(out.results[0].png_base64, "base64"));
    const [r, g, b] = png.rgb(190, 15);
    expect(Math.max(r, g, b)).toBeLessThan(0x40);
  }, 900_000);

  it("a fork is a Wayland box of the same spec that replays the batches: the same text in the same field", async () => {
    const page = "data:text/html,<style>body{margin:0}input{position:absolute;left:40px;top:40px;width:400px;height:40px}</style><input id=t>";
    const text = "fork ✓ 中文 é";
    await batch([{ type: "open_url", url: page, target: "current" }, { type: "wait", ms: 300 }]);
    await batch([{ type: "click", at: { x: 200, y: 150 } }, { type: "type", text }]);
    const value = async (id: string) => {
      const res = await server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: { actions: [{ type: "evaluate", what: { expression: "document.querySelector('#t').value" } }] } });
      return (await json(res)).results[0].value;
    };
    await expect.poll(() => value(box.id), { timeout: 10_000 }).toBe(text);
    const res = await server.api(`/v1/boxes/${box.id}/fork`, { method: "POST", json: {} });
    const fork = await json(res);
    expect(res.status, JSON.stringify(fork).slice(0, 600)).toBe(200);
    // Every batch so far, the dock's checks too (windows, capture), replayed without a failure.
    expect(fork.replay).toMatchObject({ stopped_at: null, truncated: false });
    expect(fork.replay.ok).toBe(fork.replay.attempted);
    expect(fork.replay.attempted).toBeGreaterThanOrEqual(6);
    expect(fork.box.spec.desktop).toMatchObject({ server: "wayland", features: ["dock", "x11_apps"] });
    await expect.poll(() => value(fork.box.id), { timeout: 10_000 }).toBe(text);
    await server.api(`/v1/boxes/${fork.box.id}`, { method: "DELETE" });
  }, 300_000);

  it("a click on the app's launcher starts it, as desk, through its argv", async () => {
    expect(await windowsOf("XEyes")).toHaveLength(0);
    // The launchers come first, at the left of the dock.
    await batch([{ type: "click", at: { x: 14, y: box.spec.desktop.height - 15 } }]);
    await expect.poll(() => windowsOf("XEyes"), { timeout: 15_000 }).toHaveLength(1);
    // Started by the dock, as desk (sway's child), through the app's argv.
    const ps = await json(await server.api(`/v1/boxes/${box.id}/exec`, { method: "POST", json: { argv: ["ps", "-C", "xeyes", "-o", "user:8,args"] } }));
    expect(ps.stdout).toMatch(/desk\s+xeyes -geometry 240x180\+500\+200/);
  }, 60_000);
});
