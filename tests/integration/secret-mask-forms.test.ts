import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inFrontPage } from "../support/cdp";
import { SITE, serveSite } from "../support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Seed 004: a secret is typed "without it ever reaching your client… or model context". Pages
// change what is typed (a card number grouped, an IBAN upper-cased, a field's maxlength, CSS
// text-transform), send it form-encoded, write it as JSON with \u escapes or in another Unicode
// normal form: every /v1 answer about the box still shows dots, not the value nor a part of it.
// Each check reads the page through its own DevTools first, so the value is known to be there.

let server: TestServer;
let box: any;

const SECRETS = {
  f_card: "4111111111111111",
  f_iban: "de89370400440532013000",
  f_tok: "TokAbc123xyzQ",
  f_pw: "Hunter2!Zq9x",
  f_at: "me@x pass9Q",
  f_apos: "it's9Secret",
  f_uml: "pässwörd77",
  f_slash: "ab/cd9Xyz1",
};
const PAGE = `${SITE}/secret-forms.html`;

const api = (path: string, init: Parameters<TestServer["api"]>[1] = {}) => server.api(`/v1/boxes/${box.id}${path}`, init);
const inPage = <T>(expr: string) => inFrontPage<T>(server, box.id, expr);
async function okBatch(actions: unknown[]) {
  const res = await api("/screens/0/actions", { method: "POST", json: { actions } });
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 800)).toBe(200);
  expect(out.stopped_at, JSON.stringify(out).slice(0, 800)).toBeNull();
  return out;
}
/** An answer as the agent reads it: its text, and every string in it as JSON.parse gives it. */
async function read(path: string, init?: Parameters<TestServer["api"]>[1]): Promise<string> {
  const res = await api(path, init);
  const text = await res.text();
  const strings: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === "string") strings.push(v);
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) (strings.push(k), walk(x));
  };
  try {
    walk(JSON.parse(text));
  } catch {}
  return `${res.status} ${text}\n${strings.join("\n")}`;
}
/** The reads an agent makes of the page: snapshot, find, text, markdown, raw, tabs, evaluate. */
async function answers(expression: string, q = "Card"): Promise<Record<string, string>> {
  return {
    snapshot: await read("/page/snapshot"),
    find: await read(`/page/find?q=${q}`),
    text: await read("/page?format=text"),
    markdown: await read("/page?format=markdown"),
    raw: await read("/page?format=raw"),
    pages: await read("/pages"),
    evaluate: await read("/page/evaluate", { method: "POST", json: { expression } }),
  };
}
function expectNone(texts: Record<string, string>, ...parts: string[]) {
  for (const [name, text] of Object.entries(texts)) {
    for (const p of parts) expect(text, `${name} shows ${JSON.stringify(p)}: ${text.slice(0, 1500)}`).not.toContain(p);
  }
}
async function fill(query: string, secret: string): Promise<string> {
  const out = await read("/page/element", { method: "POST", json: { op: "fill", query, secret_ref: secret } });
  expect(out).toMatch(/^200 /);
  return out;
}

beforeAll(async () => {
  server = await startServer();
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  await serveSite(server, box.id);
  for (const [name, value] of Object.entries(SECRETS)) {
    expect((await server.api(`/v1/secrets/${name}`, { method: "PUT", json: { value } })).status).toBe(200);
  }
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("a secret the page changes is dots in every answer", () => {
  it("a card number grouped, an IBAN upper-cased and grouped, a token upper-cased: in the fill's answer and every read", async () => {
    await okBatch([{ type: "open_url", url: PAGE }]);
    const filled = { card: await fill("Card number", "f_card"), iban: await fill("IBAN", "f_iban"), tok: await fill("Token", "f_tok") };
    expect(await inPage<string>("document.getElementById('card').value")).toBe("4111 1111 1111 1111");
    expect(await inPage<string>("document.getElementById('iban').value")).toBe("DE89 3704 0044 0532 0130 00");
    expect(await inPage<string>("document.getElementById('tok').value")).toBe("TOKABC123XYZQ");
    const texts = { ...filled, ...(await answers("[...document.querySelectorAll('input')].map((i) => i.value).join('|')")) };
    expectNone(texts, "1111 1111", "4111 1", "1111", "DE89 3704", "0532 0130", "TOKABC123", "ABC123XYZ");
    expect(filled.card).toContain("••••••");
  });

  it("cut at the field's maxlength (fill, and a batch's type then snapshot) and upper-cased by CSS", async () => {
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }]);
    const filled = await fill("Short", "f_tok");
    expect(await inPage<string>("document.getElementById('short').value")).toBe("TokAbc12");
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }]);
    const batch = await okBatch([{ type: "on_page", what: { op: "click", query: "Short" } }, { type: "type", secret_ref: "f_tok" }, { type: "snapshot" }]);
    expect(await inPage<string>("document.getElementById('short').value")).toBe("TokAbc12");
    await fill("Nick", "f_tok");
    expect(await inPage<string>("document.getElementById('shout').innerText")).toBe("TOKABC123XYZQ");
    const texts = { filled, batch: JSON.stringify(batch), ...(await answers("document.getElementById('shout').innerText", "Short")) };
    expectNone(texts, "TokAbc12", "TOKABC123", "OKABC123XY");
  });

  it("sent by a GET form (form-encoded) and encoded by the URL parser: tabs, snapshot, reads, evaluate", async () => {
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }]);
    await fill("Pw", "f_pw");
    await okBatch([{ type: "on_page", what: { op: "click", query: "Send" } }, { type: "wait", ms: 500 }]);
    await expect.poll(() => inPage<string>("location.search")).toBe("?pw=Hunter2%21Zq9x");
    const sent = await answers("location.href", "Domain");
    expectNone(sent, "Hunter2%21Zq9x", "Hunter2");
    await okBatch([{ type: "open_url", url: `${SITE}/example.html?x=it's9Secret#me@x pass9Q`, target: "current" }]);
    expect(await inPage<string>("location.href")).toBe(`${SITE}/example.html?x=it%27s9Secret#me@x%20pass9Q`);
    const parsed = await answers("location.href", "Domain");
    expectNone(parsed, "it%27s9Secret", "me@x%20pass9Q", "s9Secret", "pass9Q");
  });

  it("written as JSON with \\u and \\/ escapes, and in Unicode's decomposed form (NFD)", async () => {
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }]);
    // As Python's json.dumps writes it, and as PHP's json_encode escapes a slash.
    await inPage(String.raw`(() => {
      document.getElementById('json').textContent = '{"acc":"p\\u00e4ssw\\u00f6rd77","key":"ab\\/cd9Xyz1"}';
      document.getElementById('nfd').textContent = 'user ' + 'pässwörd77'.normalize('NFD') + ' end';
      const s = document.createElement('script'); s.type = 'application/json'; s.textContent = document.getElementById('json').textContent; document.body.append(s);
    })()`);
    expect(await inPage<string>("document.getElementById('json').textContent")).toContain("p\\u00e4ssw");
    const texts = await answers("document.body.innerText + document.querySelector('script[type]').textContent", "Pw");
    expectNone(texts, "u00e4ssw", "rd77", "cd9Xyz1", "pässwörd77".normalize("NFD"), "sswo");
    expect(texts.text).toContain("user •••••• end");
  });
});
