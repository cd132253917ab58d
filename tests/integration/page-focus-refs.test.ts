import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Page } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Keys typed after a page was opened in the front tab (`open_url` with `target: "current"`) went
// to Chromium's address bar, which kept the keyboard (a fresh box's about:blank tab has it there),
// not to the element an `on_page` focused or filled.

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
async function inPage<T>(expr: string): Promise<T> {
  const p = await Page.open(server, box.id);
  try {
    return await p.evaluate<T>(expr);
  } finally {
    p.close();
  }
}
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
