import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// A person takes a screen: the agent's input is refused on the server and in the box, held
// input is let go, reads still work, and the screen comes back by hand or by itself.

const PAGE = `<!doctype html><html><body style="margin:0">
<button id="b" style="position:absolute;left:20px;top:20px;width:300px;height:100px">Click</button>
<script>
window.st = { clicks: 0, keys: {} };
b.addEventListener("click", () => st.clicks++);
document.addEventListener("keydown", (e) => { st.keys[e.key] = "down"; });
document.addEventListener("keyup", (e) => { st.keys[e.key] = "up"; });
</script></body></html>`;

let server: TestServer;
let box: any;
let page: Page;

const base = () => `/v1/boxes/${box.id}/screens/0`;
const batch = (body: unknown) => server.api(`${base()}/actions`, { method: "POST", json: body });
const takeOver = (shared = false) => server.api(`${base()}/takeover`, { method: "POST", json: { shared } });
const giveBack = () => server.api(`${base()}/takeover`, { method: "DELETE" });
const clicks = () => page.evaluate<number>("window.st.clicks");

beforeAll(async () => {
  server = await startServer({ HOLM_TAKEOVER_GRACE_SECS: "3" });
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  page = await Page.open(server, box.id);
});

afterAll(async () => {
  page?.close();
  await server?.stop();
  await removeTestBoxes();
});

beforeEach(async () => {
  await giveBack();
  await page.navigate(`data:text/html;base64,${Buffer.from(PAGE).toString("base64")}`);
});

describe("takeover", () => {
  it("exclusive: agent input answers 409 denied and reaches nothing; reads work; give-back restores", async () => {
    const at = await page.centre("#b");
    const res = await takeOver();
    expect(res.status).toBe(200);
    const taken = await json(res);
    expect(taken).toMatchObject({ exclusive: true, screen: 0 });
    expect(taken.url).toContain(`/boxes/${box.id}`);

    const refused = await batch({ actions: [{ type: "click", at }] });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toMatchObject({ code: "denied", retryable: true });
    const focus = await server.api(`${base()}/windows/0x1/focus`, { method: "POST" });
    expect(focus.status).toBe(409);
    expect(await clicks()).toBe(0);

    // Reads still work while the person has the screen.
    const read = await batch({ actions: [{ type: "cursor" }, { type: "windows" }], want: ["frame"] });
    expect(read.status).toBe(200);
    expect((await server.api(`${base()}/frame`)).status).toBe(200);

    const back = await giveBack();
    expect(await json(back)).toMatchObject({ given_back: true });
    const ok = await batch({ actions: [{ type: "click", at }] });
    expect(ok.status).toBe(200);
    expect(await clicks()).toBe(1);

    const events = await json(await server.api("/v1/events?limit=1000"));
    const kinds = events.events.filter((e: any) => e.box_id === box.id).map((e: any) => e.kind);
    expect(kinds).toContain("screen.taken_over");
    expect(kinds).toContain("screen.given_back");
  });

  it("shared: both drive", async () => {
    const at = await page.centre("#b");
    expect(await json(await takeOver(true))).toMatchObject({ exclusive: false });
    expect((await batch({ actions: [{ type: "click", at }] })).status).toBe(200);
    expect(await clicks()).toBe(1);
  });

  it("lets go of the agent's held key at the moment of takeover", async () => {
    await batch({ actions: [{ type: "click", at: await page.centre("#b") }] });
    const held = await json(await batch({ actions: [{ type: "key_down", key: "shift", hold_ms: 30_000 }] }));
    expect(held.holding_keys).toHaveLength(1);
    expect(await page.evaluate("window.st.keys.Shift")).toBe("down");
    await takeOver();
    expect(await page.evaluate("window.st.keys.Shift")).toBe("up");
  });

  it("stops a batch that was already running when the person took over", async () => {
    const at = await page.centre("#b");
    const running = batch({ actions: [{ type: "wait", ms: 1500 }, { type: "click", at }] });
    await new Promise((r) => setTimeout(r, 400));
    await takeOver();
    const out = await json(await running);
    expect(out.stopped_at).toBe(1);
    expect(out.results[1]).toMatchObject({ ok: false, code: "denied" });
    expect(await clicks()).toBe(0);
  });

  it("gives the screen back by itself when the person never drives it (grace period)", async () => {
    await takeOver();
    expect((await batch({ actions: [{ type: "move", to: { x: 5, y: 5 } }] })).status).toBe(409);
    const viewers = await json(await server.api(`${base()}/viewers`));
    expect(viewers.taken_over).toBe(true);
    await new Promise((r) => setTimeout(r, 4500));
    expect((await batch({ actions: [{ type: "move", to: { x: 5, y: 5 } }] })).status).toBe(200);
    expect((await json(await server.api(`${base()}/viewers`))).taken_over).toBe(false);
  });
});
