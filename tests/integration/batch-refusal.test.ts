import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inFrontPage } from "../support/cdp";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// "A malformed step of any kind refuses the whole batch with 400 before anything runs" (README):
// key names, control characters in text and a secret_ref whose secret is gone are refused by the
// server, so the steps before them never run. And a fork whose replay meets such a step (a secret
// removed since) names that step, says why, and records it in its trace. On one real box (and
// its fork).

let server: TestServer;
let box: any;
const made: string[] = [];

const batch = (body: unknown, id = box.id) => server.api(`/v1/boxes/${id}/screens/0/actions`, { method: "POST", json: body });
async function okBatch(body: unknown, id = box.id) {
  const res = await batch(body, id);
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 800)).toBe(200);
  return out;
}
const inPage = <T>(expr: string, id = box.id) => inFrontPage<T>(server, id, expr);
const AREA = `data:text/html,<title>Area</title><textarea id=t autofocus></textarea>`;
const LOGIN = `data:text/html,<title>Login</title><input id=pw type=password placeholder=Password><button onclick="document.title='sent'">Go</button>`;

beforeAll(async () => {
  server = await startServer();
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  made.push(box.id);
});

afterAll(async () => {
  for (const id of made) await server.api(`/v1/boxes/${id}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } }).catch(() => {});
  await server?.stop();
  await removeTestBoxes();
});

describe("a malformed step refuses the batch before anything runs", () => {
  const cases: [string, unknown, RegExp][] = [
    ["an unknown key name", { type: "press", chord: "nosuchkey" }, /actions\[1\] \(press\): chord: unknown key name "nosuchkey"/],
    ["a chord ending in +", { type: "press", chord: "ctrl+" }, /actions\[1\] \(press\): chord: chord "ctrl\+" ends with \+/],
    ["an unknown key in `then`", { type: "press", chord: "a", then: ["b", "nope_key"] }, /actions\[1\] \(press\): then\.1: unknown key name "nope_key"/],
    ["a non-modifier before +", { type: "press", chord: "a+b" }, /actions\[1\] \(press\): chord: "a" in chord "a\+b" is not a modifier/],
    ["an unknown key_down key", { type: "key_down", key: "nosuchkey" }, /actions\[1\] \(key_down\): key: unknown key name "nosuchkey"/],
    ["a chord as key_up's key", { type: "key_up", key: "ctrl+a" }, /actions\[1\] \(key_up\): key: unknown key name "ctrl\+a"/],
    ["a control character in text", { type: "type", text: "x\u0000" }, /actions\[1\] \(type\): text: text holds control character U\+0000/],
    ["a secret_ref to no secret (type)", { type: "type", secret_ref: "no_such_secret" }, /actions\[1\].*no secret named "no_such_secret"/],
    ["a secret_ref to no secret (fill)", { type: "on_page", what: { op: "fill", query: "css=#t", secret_ref: "no_such_secret" } }, /actions\[1\].*no secret named "no_such_secret"/],
  ];
  it.each(cases)("%s: 400 naming the step; the textarea stays empty", async (_name, bad, message) => {
    await okBatch({ actions: [{ type: "open_url", url: AREA, target: "current" }, { type: "on_page", what: { op: "wait_for", query: "css=#t" } }] });
    const res = await batch({ actions: [{ type: "type", text: "A" }, bad] });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body).toMatchObject({ code: "bad_request" });
    expect(body.message).toMatch(message);
    expect(await inPage<string>("document.querySelector('#t').value")).toBe("");
  });

  it("a secret whose value holds a control character no key types: 400 naming the character, never the value", async () => {
    expect((await server.api("/v1/secrets/bell", { method: "PUT", json: { value: "ring\u0007bell-value" } })).status).toBe(200);
    await okBatch({ actions: [{ type: "open_url", url: AREA, target: "current" }, { type: "on_page", what: { op: "wait_for", query: "css=#t" } }] });
    const res = await batch({ actions: [{ type: "type", text: "A" }, { type: "type", secret_ref: "bell" }] });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body.message).toMatch(/actions\[1\] \(type\): the value of secret "bell" cannot be typed: .*U\+0007/);
    expect(body.message).not.toContain("bell-value");
    expect(await inPage<string>("document.querySelector('#t').value")).toBe("");
  });

  it("well-formed key names still run: aliases, a lone +, hex and U+ names, a modifier alone", async () => {
    await okBatch({ actions: [{ type: "open_url", url: AREA, target: "current" }, { type: "on_page", what: { op: "wait_for", query: "css=#t" } }] });
    const out = await okBatch({
      actions: [
        { type: "type", text: "ab c\n" },
        { type: "press", chord: ["shift+A", "+", "U+0042", "0x43", "Return"], then: ["BackSpace"] },
        { type: "press", chord: "ctrl" },
        { type: "key_down", key: "Shift" },
        { type: "key_up", key: "shift" },
      ],
    });
    expect(out.results.map((r: any) => r.ok), JSON.stringify(out.results)).toEqual([true, true, true, true, true]);
    expect(await inPage<string>("document.querySelector('#t').value")).toBe("ab c\nA+BC");
  });
});

describe("a fork whose replay meets a secret that is gone", () => {
  it("stops at that step's seq, says why, and its trace records the refusal", async () => {
    expect((await server.api("/v1/secrets/r5b", { method: "PUT", json: { value: "hunter2-r5b" } })).status).toBe(200);
    await okBatch({
      actions: [
        { type: "open_url", url: LOGIN, target: "current" },
        { type: "on_page", what: { op: "fill", query: "Password", secret_ref: "r5b" } },
        { type: "on_page", what: { op: "click", query: "Go" } },
        { type: "type", secret_ref: "r5b" },
      ],
    });
    const trace = await json(await server.api(`/v1/boxes/${box.id}/trace?limit=500`));
    const acted = trace.entries.filter((e: any) => e.event === "acted");
    const fill = acted.findLast((e: any) => e.data.step.type === "on_page" && e.data.step.what.op === "fill");
    const open = acted.findLast((e: any) => e.data.step.type === "open_url" && e.seq < fill.seq);
    expect(fill.seq).toBeGreaterThan(open.seq);

    expect((await server.api("/v1/secrets/r5b", { method: "DELETE" })).status).toBe(200);
    const res = await server.api(`/v1/boxes/${box.id}/fork`, { method: "POST", json: {} });
    const forked = await json(res);
    expect(res.status, JSON.stringify(forked)).toBe(200);
    made.push(forked.box.id);
    expect(forked.replay.stopped_at).toBe(fill.seq);
    expect(forked.replay.reason).toMatch(/no secret named "r5b"/);
    expect(forked.replay.reason).toContain(`seq ${fill.seq}`);
    // Refused whole: the steps before the fill (the open_url) did not run either, and it says so.
    expect(forked.replay.reason).toContain(`none of its batch (seq ${open.seq}–`);
    expect(forked.replay.ok).toBe(forked.replay.attempted - 1);

    const got = await json(await server.api(`/v1/boxes/${forked.box.id}`));
    expect(got.replay).toMatchObject({ done: true, stopped_at: fill.seq, reason: forked.replay.reason });
    const forkTrace = await json(await server.api(`/v1/boxes/${forked.box.id}/trace?limit=500`));
    const refused = forkTrace.entries.filter((e: any) => e.event === "refused");
    expect(refused.length, JSON.stringify(forkTrace.entries.map((e: any) => e.event))).toBe(1);
    expect(refused[0].data.reason).toMatch(/no secret named "r5b"/);
    // A trace the caller gave that no longer runs is no fault of the server's.
    expect(server.logs()).not.toMatch(/"level":50[^\n]*no secret named/);
  });
});
