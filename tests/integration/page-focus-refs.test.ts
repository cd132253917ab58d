import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inFrontPage } from "../support/cdp";
import { SITE, serveSite } from "../support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Two things a page opened in the front tab (`open_url` with `target: "current"`) got wrong:
// keys typed after it went to Chromium's address bar, which kept the keyboard (a fresh box's
// about:blank tab has it there), not to the element an `on_page` focused or filled; and the
// refs of its main frame looked like an iframe's (`f1e2`), since Playwright numbers the main
// frame anew at each navigation.

let server: TestServer;
let box: any;

const batch = (actions: unknown[]) => server.api(`/v1/boxes/${box.id}/screens/0/actions`, { method: "POST", json: { actions } });
async function okBatch(actions: unknown[]) {
  const res = await batch(actions);
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 800)).toBe(200);
  expect(out.results.map((r: any) => r.ok), JSON.stringify(out.results).slice(0, 800)).toEqual(actions.map(() => true));
  return out;
}
/** The front page's value of `expr`, read through its DevTools. */
const inPage = <T>(expr: string) => inFrontPage<T>(server, box.id, expr);
const snapshot = async () => json(await server.api(`/v1/boxes/${box.id}/page/snapshot`));
/** Puts the keyboard in the address bar, as a fresh box's about:blank tab has it. */
const toAddressBar = { type: "press", chord: "ctrl+l" };

beforeAll(async () => {
  server = await startServer();
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("keys after open_url in the front tab reach the page, not the address bar", () => {
  it("on a fresh box: open_url current, on_page focus, type", async () => {
    await okBatch([
      { type: "open_url", target: "current", url: "data:text/html,<title>keys</title><input id=e>" },
      { type: "wait", ms: 800 },
      { type: "on_page", what: { op: "focus", query: "css=#e" } },
      { type: "type", text: "hello" },
    ]);
    expect(await inPage<string>("document.querySelector('#e').value")).toBe("hello");
    expect(await inPage<string>("document.title")).toBe("keys");
  });

  it("an input the page focuses itself gets the keys typed right after open_url", async () => {
    await okBatch([
      toAddressBar,
      { type: "open_url", target: "current", url: "data:text/html,<title>auto</title><input id=a autofocus>" },
      { type: "type", text: "abc" },
    ]);
    expect(await inPage<string>("document.querySelector('#a').value")).toBe("abc");
  });

  it("on_page fill, then press Enter: the form is sent", async () => {
    await okBatch([
      { type: "open_url", target: "current", url: `data:text/html,<title>form</title><form onsubmit="document.title='sent '+f.value;return false"><input id=f></form>` },
      toAddressBar,
      { type: "on_page", what: { op: "fill", query: "css=#f", text: "xyz" } },
      { type: "press", chord: "Return" },
    ]);
    expect(await inPage<string>("document.title")).toBe("sent xyz");
  });

  it("on_page focus takes the keyboard from the address bar", async () => {
    await okBatch([
      { type: "open_url", url: "data:text/html,<title>tab</title><input id=t>" },
      toAddressBar,
      { type: "on_page", what: { op: "focus", query: "css=#t" } },
      { type: "type", text: "typed" },
    ]);
    expect(await inPage<string>("document.querySelector('#t').value")).toBe("typed");
  });
});

describe("refs of the main frame are eN however the page was opened", () => {
  const refsOf = (snap: any): string[] => snap.elements.map((e: any) => e.ref);

  it("after open_url current and after a reload", async () => {
    await okBatch([{ type: "open_url", target: "current", url: "data:text/html,<title>r</title><button onclick=\"document.title='hit'\">Go</button><input>" }]);
    let snap = await snapshot();
    expect(refsOf(snap).length).toBeGreaterThan(0);
    for (const ref of refsOf(snap)) expect(ref).toMatch(/^e\d+$/);
    await okBatch([{ type: "on_page", what: { op: "history", go: "reload" } }]);
    // Found by text before any snapshot of the new document: the same kind of ref.
    const found = await json(await server.api(`/v1/boxes/${box.id}/page/find?q=Go`));
    expect(found.elements[0].ref).toMatch(/^e\d+$/);
    snap = await snapshot();
    for (const ref of refsOf(snap)) expect(ref).toMatch(/^e\d+$/);
    expect(snap.elements.find((e: any) => e.role === "button").ref).toBe(found.elements[0].ref);
    // A ref acts on its element.
    const go = snap.elements.find((e: any) => e.role === "button");
    const out = await okBatch([{ type: "on_page", what: { op: "click", query: go.ref } }]);
    expect(out.results[0].element).toMatchObject({ ref: go.ref });
    expect(await inPage<string>("document.title")).toBe("hit");
  });

  it("an iframe's refs keep their frame's prefix; the page's have none", async () => {
    await serveSite(server, box.id);
    await okBatch([{ type: "open_url", target: "current", url: `${SITE}/element-frame.html` }]);
    // wait_for looks in the page itself, not in its frames: the snapshot is asked until it shows the frame's.
    let snap: any;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
      snap = await snapshot();
      if (snap.elements.some((e: any) => e.name === "Inner button")) break;
    }
    const outer = snap.elements.find((e: any) => e.name === "Outer button");
    const inner = snap.elements.find((e: any) => e.name === "Inner button");
    expect(outer.ref).toMatch(/^e\d+$/);
    expect(inner.ref).toMatch(/^f\d+e\d+$/);
    await okBatch([
      { type: "on_page", what: { op: "click", query: inner.ref } },
      { type: "on_page", what: { op: "click", query: outer.ref } },
    ]);
    expect(await inPage<number>("document.querySelector('iframe').contentWindow.inner")).toBe(1);
    expect(await inPage<number>("window.outer")).toBe(1);
    // Found by text, an element answers with the ref the snapshot gave it.
    const found = await json(await server.api(`/v1/boxes/${box.id}/page/find?q=Outer%20button`));
    expect(found.elements[0]).toMatchObject({ ref: outer.ref });
  });
});
