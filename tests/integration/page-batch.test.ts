import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Page, inFrontPage } from "../support/cdp";
import { SITE, serveSite } from "../support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Page steps (on_page, look, snapshot, read, evaluate, page_shot, dialog) inside batches, mixed
// with box steps, in one round trip (issue 12): the seed's Example batch as written, the parts a
// mixed batch is run in, takeover, trace and fork, and `type` with a secret_ref. Checked from the
// page itself (its DevTools, through the agent's relay), not only from the batch's answer.

let server: TestServer;
let box: any;
let page: Page;

const batch = (body: unknown, id = box.id) => server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: body });
async function okBatch(body: unknown, id = box.id) {
  const res = await batch(body, id);
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 800)).toBe(200);
  return out;
}
/** The front page's value of `expr`, read through its DevTools (a fresh attach: tabs change). */
const inPage = <T>(expr: string, id = box.id) => inFrontPage<T>(server, id, expr);

const FORM = `data:text/html,<title>Form</title><label>Email <input id=email></label><button onclick="document.title='sent '+email.value">Send</button>`;

/** The desktop the box runs: X11, or Wayland when page-batch.wayland.test.ts imports this suite. */
const DESKTOP = (globalThis as { HOLM_PAGE_BATCH_DESKTOP?: string }).HOLM_PAGE_BATCH_DESKTOP ?? "x11";

beforeAll(async () => {
  server = await startServer();
  box = await json(await server.api("/v1/boxes", { method: "POST", json: DESKTOP === "wayland" ? { spec: { desktop: { server: "wayland" } } } : {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  expect(box.spec.desktop.server).toBe(DESKTOP);
  await serveSite(server, box.id);
  page = await Page.open(server, box.id);
});

afterAll(async () => {
  page?.close();
  await server?.stop();
  await removeTestBoxes();
});

describe("the seed's Example batch (000: Example)", () => {
  it("open_url, wait_for \"Example Domain\", click \"More information\": the page follows the link, in one round trip", async () => {
    // As written, but for the URL: boxes have no internet, so the site in the box stands in for
    // https://example.com with the same title and link.
    const out = await okBatch({
      actions: [
        { type: "open_url", url: `${SITE}/example.html` },
        { type: "on_page", what: { op: "wait_for", query: "Example Domain" } },
        { type: "on_page", what: { op: "click", query: "More information" } },
      ],
      want: ["frame"],
    });
    expect(out.stopped_at).toBeNull();
    expect(out.results.map((r: any) => r.ok)).toEqual([true, true, true]);
    expect(out.frame).toMatchObject({ unchanged: false });
    expect(out.frame.png_base64).toBeTruthy();
    const deadline = Date.now() + 5000;
    while ((await inPage<string>("document.title")) !== "More information" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await inPage<string>("location.pathname")).toBe("/more.html");
    // The batch's `tabs` show where it ended.
    expect(out.tabs[0]).toMatchObject({ active: true });
  });
});

describe("a batch that mixes page steps with box steps", () => {
  it("runs every step in order, naming each by its index in the whole batch", async () => {
    const out = await okBatch({
      actions: [
        { type: "open_url", url: FORM },
        { type: "on_page", what: { op: "fill", query: "Email", text: "ada@example.com" } },
        { type: "cursor" },
        { type: "evaluate", what: { expression: "document.querySelector('#email').value" } },
        { type: "on_page", what: { op: "click", query: "Send" } },
        { type: "wait", ms: 50 },
        { type: "evaluate", what: { expression: "document.title" } },
      ],
    });
    expect(out.results).toHaveLength(7);
    expect(out.results[3].value).toBe("ada@example.com");
    expect(out.results[6].value).toBe("sent ada@example.com");
    expect(await inPage<string>("document.title")).toBe("sent ada@example.com");
  });

  it("a refused page step stops the batch at its whole-batch index; keep_going goes on", async () => {
    const out = await okBatch({
      actions: [
        { type: "open_url", url: FORM },
        { type: "wait", ms: 1 },
        { type: "on_page", what: { op: "click", query: "e99999" } },
        { type: "wait", ms: 1 },
      ],
    });
    expect(out.stopped_at).toBe(2);
    expect(out.results).toHaveLength(3);
    expect(out.results[2]).toMatchObject({ ok: false, code: "not_found" });
    expect(out.results[2].message).toMatch(/^step 2 \(on_page\)/);
    const going = await okBatch({
      actions: [{ type: "on_page", what: { op: "click", query: "e99999" } }, { type: "wait", ms: 1 }],
      keep_going: true,
    });
    expect(going.stopped_at).toBeNull();
    expect(going.results.map((r: any) => r.ok)).toEqual([false, true]);
  });

  it("a box step that fails after a page step names its whole-batch index", async () => {
    const out = await okBatch({
      actions: [
        { type: "open_url", url: FORM },
        { type: "snapshot" },
        { type: "on_window", window: "0xdeadbeef", what: { do: "focus" } },
      ],
    });
    expect(out.stopped_at).toBe(2);
    expect(out.results[2].ok).toBe(false);
    expect(out.results[2].message).toMatch(/^step 2 \(on_window\)/);
  });

  it("keys held before a page step stay down through it and are let go when the batch ends", async () => {
    const out = await okBatch({
      actions: [
        { type: "open_url", url: FORM },
        { type: "key_down", key: "shift" },
        { type: "snapshot" },
        { type: "evaluate", what: { expression: "1 + 1" } },
      ],
    });
    expect(out.results.map((r: any) => r.ok)).toEqual([true, true, true, true]);
    expect(out.results[3].value).toBe(2);
    // Let go by the batch's end, once: not silently between its parts.
    expect(out.released_keys).toEqual(["shift"]);
    expect(out.holding_keys).toEqual([]);
  });
});

describe("page actions are agent input", () => {
  it("an exclusive takeover refuses on_page, evaluate and dialog with 409 denied; snapshot and read still answer", async () => {
    await okBatch({ actions: [{ type: "open_url", url: FORM }] });
    expect((await server.api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "POST", json: { shared: false } })).status).toBe(200);
    try {
      for (const step of [
        { type: "on_page", what: { op: "fill", query: "Email", text: "x" } },
        { type: "evaluate", what: { expression: "document.title = 'hijacked'" } },
        { type: "dialog", accept: true },
      ]) {
        const res = await batch({ actions: [step] });
        expect(res.status, step.type).toBe(409);
        expect(await json(res)).toMatchObject({ code: "denied" });
      }
      expect(await inPage<string>("document.querySelector('#email').value")).toBe("");
      expect(await inPage<string>("document.title")).toBe("Form");
      const read = await okBatch({ actions: [{ type: "snapshot" }, { type: "read", what: { format: "text" } }] });
      expect(read.results.map((r: any) => r.ok)).toEqual([true, true]);
    } finally {
      await server.api(`/v1/boxes/${box.id}/screens/0/takeover`, { method: "DELETE" });
    }
  });
});

describe("trace and fork", () => {
  it("page steps are `acted` entries, and a fork replays them into its own page", async () => {
    // A box of its own (on the suite's desktop): a fork replays the whole trace, and the shared box's has the site's.
    const source = await json(await server.api("/v1/boxes", { method: "POST", json: DESKTOP === "wayland" ? { spec: { desktop: { server: "wayland" } } } : {} }));
    expect(source.state, JSON.stringify(source)).toBe("ready");
    await okBatch(
      {
        actions: [
          { type: "open_url", url: FORM },
          { type: "on_page", what: { op: "fill", query: "Email", text: "fork@example.com" } },
          { type: "on_page", what: { op: "click", query: "Send" } },
        ],
      },
      source.id,
    );
    const trace = await json(await server.api(`/v1/boxes/${source.id}/trace?limit=500`));
    const acted = trace.entries.filter((e: any) => e.event === "acted").slice(-3);
    expect(acted.map((e: any) => [e.data.step.type, e.data.step.what?.op, e.data.ok])).toEqual([
      ["open_url", undefined, true],
      ["on_page", "fill", true],
      ["on_page", "click", true],
    ]);
    const forked = await json(await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: { mode: "replay" } }));
    try {
      expect(forked.box?.id, JSON.stringify(forked)).toBeTruthy();
      expect(forked.replay, JSON.stringify(forked.replay)).toMatchObject({ stopped_at: null });
      expect(forked.replay.ok).toBeGreaterThan(0);
      const deadline = Date.now() + 10_000;
      let title = "";
      let why = "";
      const read = () => inPage<string>("document.title", forked.box.id).catch((err: Error) => ((why = err.message), ""));
      while (Date.now() < deadline && (title = await read()) !== "sent fork@example.com") {
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(title, `${why} ${JSON.stringify(forked.replay)}`).toBe("sent fork@example.com");
    } finally {
      for (const id of [forked.box?.id, source.id]) if (id) await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
  });
});

describe("page routes are recorded like steps", () => {
  it("POST …/page/element and …/page/evaluate are `acted` on_page and evaluate entries, and a fork replays them", async () => {
    const source = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
    expect(source.state, JSON.stringify(source)).toBe("ready");
    let forkId: string | undefined;
    try {
      await okBatch({ actions: [{ type: "open_url", url: FORM }] }, source.id);
      const el = await server.api(`/v1/boxes/${source.id}/page/element`, { method: "POST", json: { op: "fill", query: "Email", text: "route@example.com" } });
      expect(el.status).toBe(200);
      const ev = await server.api(`/v1/boxes/${source.id}/page/evaluate`, { method: "POST", json: { expression: "document.title = 'via route'" } });
      expect(ev.status).toBe(200);
      const trace = await json(await server.api(`/v1/boxes/${source.id}/trace?limit=500`));
      const acted = trace.entries.filter((e: any) => e.event === "acted").slice(-2);
      expect(acted.map((e: any) => [e.data.step.type, e.data.ok])).toEqual([
        ["on_page", true],
        ["evaluate", true],
      ]);
      const forked = await json(await server.api(`/v1/boxes/${source.id}/fork`, { method: "POST", json: {} }));
      forkId = forked.box?.id;
      expect(forked.replay, JSON.stringify(forked)).toMatchObject({ attempted: 3, ok: 3, stopped_at: null });
      expect(await inPage<string>("document.title", forkId)).toBe("via route");
      expect(await inPage<string>("document.querySelector('#email').value", forkId)).toBe("route@example.com");
    } finally {
      for (const id of [forkId, source.id]) if (id) await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } });
    }
  });
});

describe("secret_ref (004)", () => {
  const SECRET = "correct horse battery staple 7Q!";
  it("`type` and `fill` with a secret_ref type its value; the answer, the trace and the logs never hold it", async () => {
    expect((await server.api("/v1/secrets/login_pw", { method: "PUT", json: { value: SECRET } })).status).toBe(200);
    const out = await okBatch({
      actions: [
        { type: "open_url", url: `data:text/html,<title>pw</title><input id=a type=password autofocus><input id=b type=password placeholder=Second>` },
        { type: "on_page", what: { op: "focus", query: "css=#a" } },
        { type: "type", secret_ref: "login_pw" },
        { type: "on_page", what: { op: "fill", query: "Second", secret_ref: "login_pw" } },
      ],
    });
    expect(out.results.map((r: any) => r.ok)).toEqual([true, true, true, true]);
    expect(await inPage<string>("document.querySelector('#a').value")).toBe(SECRET);
    expect(await inPage<string>("document.querySelector('#b').value")).toBe(SECRET);
    const trace = await (await server.api(`/v1/boxes/${box.id}/trace?limit=500`)).text();
    for (const text of [JSON.stringify(out), trace, server.logs()]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(Buffer.from(SECRET).toString("base64"));
    }
    expect(trace).toContain("login_pw");
    // A name the workspace does not have refuses the batch before anything runs.
    const res = await batch({ actions: [{ type: "open_url", url: FORM }, { type: "type", secret_ref: "nope" }] });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: "bad_request" });
  });
});
