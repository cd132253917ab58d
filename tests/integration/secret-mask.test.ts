import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inFrontPage } from "../support/cdp";
import { SITE, serveSite } from "../support/site";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// Seed 004: a secret is typed "without it ever reaching your client, logs, or model context". A
// page can copy what is typed anywhere (tests/fixtures/site/secret-copy.html copies it into its
// title, a heading, another field, the console, and the URL once its form is sent); every /v1
// answer about the box shows dots instead: for `type` in a batch as for `fill`, with whitespace
// made single spaces, in error messages, and after the server restarts. Each check also reads
// the page through its own DevTools (not /v1), so the value is known to be there to leak.

let server: TestServer;
let box: any;

const PLAIN = "Zq9LEAKvalue42x";
const SPACED = "Ws7  LEAK  spaced";
const COLLAPSED = "Ws7 LEAK spaced";
const PAGE = `${SITE}/secret-copy.html`;

const api = (path: string, init: Parameters<TestServer["api"]>[1] = {}) => server.api(`/v1/boxes/${box.id}${path}`, init);
async function okBatch(actions: unknown[]) {
  const res = await api("/screens/0/actions", { method: "POST", json: { actions } });
  const out = await json(res);
  expect(res.status, JSON.stringify(out).slice(0, 800)).toBe(200);
  expect(out.stopped_at, JSON.stringify(out).slice(0, 800)).toBeNull();
  return out;
}
const inPage = <T>(expr: string) => inFrontPage<T>(server, box.id, expr);
/** What the agent reads back about the box's page, windows and tabs, as text (status and body). */
async function answers(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const read = async (name: string, path: string, init?: Parameters<TestServer["api"]>[1]) => {
    const res = await api(path, init);
    out[name] = `${res.status} ${await res.text()}`;
  };
  await read("snapshot", "/page/snapshot");
  await read("find", "/page/find?q=Pass");
  await read("text", "/page?format=text");
  await read("pages", "/pages");
  await read("windows", "/screens/0/windows");
  await read("console", "/page/console", { method: "POST", json: {} });
  await read("evaluate", "/page/evaluate", { method: "POST", json: { expression: "document.getElementById('c').value" } });
  // An error whose message names the element: the heading holds the value.
  await read("error", "/page/element", { method: "POST", json: { op: "fill", query: "css=h1", text: "x" } });
  return out;
}
function expectNone(texts: Record<string, string>, ...values: string[]) {
  for (const [name, text] of Object.entries(texts)) {
    for (const v of values) expect(text, `${name}: ${text.slice(0, 600)}`).not.toContain(v);
  }
}

beforeAll(async () => {
  // The local store: the secrets outlive the server's restart, as in production.
  server = await startServer({ HOLM_STORAGE_BACKEND: "local" });
  box = await json(await server.api("/v1/boxes", { method: "POST", json: {} }));
  expect(box.state, JSON.stringify(box)).toBe("ready");
  await serveSite(server, box.id);
  for (const [name, value] of [
    ["mask_plain", PLAIN],
    ["mask_spaced", SPACED],
  ])
    expect((await server.api(`/v1/secrets/${name}`, { method: "PUT", json: { value } })).status).toBe(200);
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("a typed secret comes back as dots in every answer about the box", () => {
  it("typed by a batch's `type`: snapshot, find, text, tabs, windows, console, evaluate, an error, the URL", async () => {
    await okBatch([
      { type: "open_url", url: PAGE },
      { type: "on_page", what: { op: "click", query: "Pass" } },
      { type: "type", secret_ref: "mask_plain" },
    ]);
    // It is on the page: in the field, its copy, the heading and the title.
    expect(await inPage<string>("document.getElementById('p').value")).toBe(PLAIN);
    await expect.poll(() => inPage<string>("document.title")).toBe(`typed ${PLAIN}`);
    const texts = await answers();
    expectNone(texts, PLAIN);
    expect(texts.snapshot).toContain("••••••");
    expect(texts.evaluate).toMatch(/^200 /);
    expect(JSON.parse(texts.evaluate.slice(4))).toMatchObject({ value: "••••••" });
    expect(texts.error).toMatch(/^422 /);

    // Sent with the form, it is in the URL the next answers carry.
    const sent = await okBatch([{ type: "press", chord: "Return" }, { type: "wait", ms: 500 }]);
    await expect.poll(() => inPage<string>("location.search")).toBe(`?p=${PLAIN}`);
    const after: Record<string, string> = { batch: JSON.stringify(sent) };
    for (const path of ["/pages", "/page/snapshot", "/page?format=text"]) after[path] = await (await api(path)).text();
    after.tabs = JSON.stringify(await okBatch([{ type: "tabs" }]));
    expectNone(after, PLAIN);
  });

  it("filled with runs of spaces: not in the fill's answer nor the snapshot, as typed or made single-spaced", async () => {
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }, { type: "wait", ms: 300 }]);
    const fill = await api("/page/element", { method: "POST", json: { op: "fill", query: "Pass", secret_ref: "mask_spaced" } });
    const filled = await fill.text();
    expect(fill.status, filled).toBe(200);
    expect(await inPage<string>("document.getElementById('c').value")).toBe(SPACED);
    expectNone({ fill: filled, ...(await answers()) }, SPACED, COLLAPSED);
  });

  it("after the server restarts (nothing typed through this server yet), a secret the page shows is still dots", async () => {
    await server.stop();
    server = await server.restart();
    await okBatch([{ type: "open_url", url: PAGE, target: "current" }, { type: "wait", ms: 300 }]);
    // The page gets the value from elsewhere (it was typed before the restart, say).
    await inPage(`(() => { const p = document.getElementById('p'); p.value = ${JSON.stringify(PLAIN)}; p.dispatchEvent(new Event('input')); })()`);
    await expect.poll(() => inPage<string>("document.title")).toBe(`typed ${PLAIN}`);
    expectNone(await answers(), PLAIN);
  });
});

// A page that copies what is typed into its heading and its title.
const COPY_PAGE = `data:text/html,<input aria-label=Name oninput="document.getElementById('h').textContent=this.value;document.title='T:'+this.value"><h1 id=h></h1><p>tail</p>`;

describe("a cut answer and a changed secret still show dots", () => {
  it("a read or evaluate cut just before a value's last character shows no part of it", async () => {
    const CUT = "Bq7sEcr3tVaLue1";
    expect((await server.api("/v1/secrets/mask_cut", { method: "PUT", json: { value: CUT } })).status).toBe(200);
    await okBatch([
      { type: "open_url", url: COPY_PAGE, target: "current" },
      { type: "on_page", what: { op: "fill", query: "Name", secret_ref: "mask_cut" } },
    ]);
    await expect.poll(() => inPage<string>("document.getElementById('h').textContent")).toBe(CUT);
    const texts: Record<string, string> = {};
    for (const limit of [4, 5, 14, 15]) {
      texts[`read ${limit}`] = await (await api(`/page?format=text&limit=${limit}`)).text();
      const ev = await api("/page/evaluate", { method: "POST", json: { expression: "document.getElementById('h').textContent", limit } });
      texts[`evaluate ${limit}`] = await ev.text();
      texts[`evaluate json ${limit + 2}`] = await (await api("/page/evaluate", { method: "POST", json: { expression: "[document.getElementById('h').textContent]", limit: limit + 2 } })).text();
    }
    // Every cut of the value from 4 characters on is no part of any answer.
    expectNone(texts, ...[4, 5, 8, 13, 14].map((n) => CUT.slice(0, n)));
    expect(JSON.parse(texts["read 14"])).toMatchObject({ cut: true });
    expect(JSON.parse(texts["evaluate 14"]).value).toContain("•");
  });

  it("a value with HTML or markdown marks in it: the raw read (HTML-escaped) and the markdown read (backslashes) show dots", async () => {
    const values = { mask_html: 'Rw&LEAK<val>"42', mask_md: "pass_word*[1]`x" };
    for (const [name, value] of Object.entries(values)) {
      expect((await server.api(`/v1/secrets/${name}`, { method: "PUT", json: { value } })).status).toBe(200);
    }
    const texts: Record<string, string> = {};
    for (const [name, value] of Object.entries(values)) {
      await okBatch([
        { type: "open_url", url: COPY_PAGE, target: "current" },
        { type: "on_page", what: { op: "fill", query: "Name", secret_ref: name } },
      ]);
      await expect.poll(() => inPage<string>("document.getElementById('h').textContent")).toBe(value);
      // The value in an attribute as well as in text, as a framework's controlled input does.
      await inPage(`document.getElementById('h').setAttribute('data-v', ${JSON.stringify(value)})`);
      for (const format of ["raw", "markdown", "text"]) {
        const res = await api(`/page?format=${format}`);
        expect(res.status).toBe(200);
        // The content as the agent reads it (in the JSON text a backslash would be doubled).
        texts[`${name} ${format}`] = (await res.json()).content;
      }
    }
    expectNone(texts, "Rw&amp;LEAK", "LEAK&lt;val&gt;", "&quot;42", "pass\\_word", "word\\*\\[1\\]", "LEAK<val>", "pass_word");
    expect(texts["mask_html raw"]).toContain("•");
    expect(texts["mask_md markdown"]).toContain("•");
  });

  it("a value typed before its secret changed stays dots after the server restarts", async () => {
    const OLD = "Hx4rOtAtedVal9e", NEW = "Cw2OtherSecr3t2";
    expect((await server.api("/v1/secrets/mask_rot", { method: "PUT", json: { value: OLD } })).status).toBe(200);
    await okBatch([
      { type: "open_url", url: COPY_PAGE, target: "current" },
      { type: "on_page", what: { op: "fill", query: "Name", secret_ref: "mask_rot" } },
    ]);
    expect((await server.api("/v1/secrets/mask_rot", { method: "PUT", json: { value: NEW } })).status).toBe(200);
    await expect.poll(() => inPage<string>("document.title")).toBe(`T:${OLD}`);
    const title = async () => (await api("/page/evaluate", { method: "POST", json: { expression: "document.title" } })).text();
    expect(JSON.parse(await title())).toMatchObject({ value: "T:••••••" });
    await server.stop();
    server = await server.restart();
    expect(await inPage<string>("document.title")).toBe(`T:${OLD}`);
    const after = { evaluate: await title(), text: await (await api("/page?format=text")).text(), snapshot: await (await api("/page/snapshot")).text() };
    expectNone(after, OLD);
    expect(JSON.parse(after.evaluate)).toMatchObject({ value: "T:••••••" });
  });
});

describe("a secret's value in a text file of the box", () => {
  it("reads back as dots: GET …/files and a batch's read_file (its bytes), MCP read_file (its text, for the model), as grep's lines do", async () => {
    // A page's download, a log, notes: the value got into a file. grep's lines were dots already;
    // the file's bytes came as they are, and read_file put them before the model as text.
    const FILE = "/tmp/mask/notes.txt";
    const text = `user=ada\npassword=${PLAIN}\n`;
    const put = await api("/files", { method: "PUT", json: { path: FILE, contents_base64: Buffer.from(text).toString("base64") } });
    expect(put.status).toBe(200);
    const grep = await json(await api("/files/grep", { method: "POST", json: { pattern: "password=", path: "/tmp/mask" } }));
    expect(grep.matches).toMatchObject([{ path: FILE, line: 2, text: "password=••••••" }]);

    const res = await api(`/files?path=${encodeURIComponent(FILE)}`);
    const read = await json(res);
    expect(res.status, JSON.stringify(read)).toBe(200);
    const got = Buffer.from(read.contents_base64, "base64").toString("utf8");
    expect(got).toBe("user=ada\npassword=••••••\n");
    expect(read.bytes).toBe(Buffer.byteLength(got));
    // A batch's read_file step, the same.
    const batch = await okBatch([{ type: "read_file", path: FILE }]);
    const files = [...JSON.stringify(batch).matchAll(/"contents_base64":"([^"]*)"/g)].map((x) => Buffer.from(x[1]!, "base64").toString());
    expect(files).toEqual(["user=ada\npassword=••••••\n"]);

    const transport = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${server.token}` } } });
    const client = new Client({ name: "holm-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      const r = (await client.callTool({ name: "read_file", arguments: { box: box.id, path: FILE } })) as { isError?: boolean; content: Array<{ type: string; text?: string }> };
      expect(r.isError, JSON.stringify(r)).toBeFalsy();
      const all = r.content.map((c) => c.text ?? "").join("\n");
      expect(all).toContain("password=••••••");
      for (const c of r.content) expect(Buffer.from(JSON.parse(c.text!.startsWith("{") ? c.text! : "{}").contents_base64 ?? "", "base64").toString()).not.toContain(PLAIN);
      expectNone({ mcp: all }, PLAIN);
    } finally {
      await client.close().catch(() => undefined);
    }
    // A binary file (a NUL in it) is bytes, not text: it goes as it is.
    const bin = Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(PLAIN)]);
    await api("/files", { method: "PUT", json: { path: "/tmp/mask/blob.bin", contents_base64: bin.toString("base64") } });
    const blob = await json(await api("/files?path=/tmp/mask/blob.bin"));
    expect(Buffer.from(blob.contents_base64, "base64").equals(bin)).toBe(true);
  });
});
