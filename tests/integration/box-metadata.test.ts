import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeSpec, specDigest } from "~/models/spec.server";
import type { Person } from "../support/console";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";
import { type Api, twoWorkspaces } from "../support/workspaces";

// A box's name and labels through /v1 (holm's addition): `metadata` on POST /v1/boxes (not part
// of the spec or its digest, idempotent like the rest of the body) and PATCH /v1/boxes/{id}
// (strict body; name null clears, labels replace). Every refusal names the field, changes
// nothing and launches nothing; another workspace's box is 404 before its body is read; a viewer
// is refused as every write refuses one; a starting box answers 409 like every other call on it.
// Jobs are queued, so a new box is `starting` for a moment and its refusal can be seen.
// The box's own console page renames and relabels through the same model and the same refusals.

let server: TestServer;
let asA: Api;
let asB: Api;
let ada: Person;
let bob: Person;
let vic: Person;
let c: Awaited<ReturnType<typeof twoWorkspaces>>["c"];
let adaCsrf = "";
let vicCsrf = "";
let boxId = "";

const META = { name: "checkout flow", labels: { team: "web", "ci.run/id": "42" } };

async function waitReady(api: Api, id: string) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const box = await json(await api(`/v1/boxes/${id}`));
    if (box.state !== "starting") return box;
    if (Date.now() > deadline) throw new Error(`box ${id} still starting`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const patch = (api: Api, id: string, body: unknown) => api(`/v1/boxes/${id}`, { method: "PATCH", json: body });

async function refused(res: Response, status: number, code: string, message?: string | RegExp) {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body.code).toBe(code);
  expect(typeof body.retryable).toBe("boolean");
  if (message) expect(body.message).toMatch(message);
  return body;
}

const session = (p: Person, csrf?: string) => (path: string, init: RequestInit & { json?: unknown } = {}) =>
  fetch(`${server.base}${path}`, {
    ...init,
    headers: { cookie: p.cookie, "content-type": "application/json", ...(csrf ? { "x-holm-csrf": csrf } : {}) },
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  });

beforeAll(async () => {
  server = await startServer({ HOLM_SERVER_JOBS: "queue" });
  const w = await twoWorkspaces(server);
  ({ ada, bob, asA, asB, c } = w);
  vic = await w.c.invite(ada, "vic@example.com", "viewer");
  adaCsrf = w.c.csrfIn(await w.c.page(ada, "/keys"));
  vicCsrf = w.c.csrfIn(await w.c.page(vic, "/keys"));
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("metadata on POST /v1/boxes", () => {
  it("refuses bad metadata by field, and unknown keys, launching nothing", async () => {
    const create = (body: unknown) => asA("/v1/boxes", { method: "POST", json: body });
    await refused(await create({ metadata: { nme: "x" } }), 400, "bad_request", 'unknown key "nme" in metadata');
    await refused(await create({ meta: {} }), 400, "bad_request", 'unknown key "meta"');
    await refused(await create({ metadata: { name: "" } }), 400, "bad_request", /^metadata\.name: a name needs at least one character/);
    await refused(await create({ metadata: { name: "x".repeat(81) } }), 400, "bad_request", /^metadata\.name: a name has at most 80 characters/);
    await refused(await create({ metadata: { labels: { Team: "web" } } }), 400, "bad_request", /^metadata\.labels\.Team: a label key is/);
    // A name or label that makes the console name another box: a right-to-left override shows
    // "\u202Ebd-dorp" as "prod-db" (and turns the rest of "Remove …?" around it); a zero-width
    // space makes "prod-db\u200B" look exactly like "prod-db" in the list, switcher and dialogs.
    const lying = /a name has no invisible or direction-changing characters/;
    await refused(await create({ metadata: { name: "\u202Ebd-dorp" } }), 400, "bad_request", new RegExp(`^metadata\\.name: ${lying.source}`));
    await refused(await create({ metadata: { name: "prod-db\u200B" } }), 400, "bad_request", new RegExp(`^metadata\\.name: ${lying.source}`));
    await refused(await create({ metadata: { name: "a\u2067b\u2069" } }), 400, "bad_request", new RegExp(`^metadata\\.name: ${lying.source}`));
    await refused(await create({ metadata: { name: "line\u2028break" } }), 400, "bad_request", new RegExp(`^metadata\\.name: ${lying.source}`));
    await refused(
      await create({ metadata: { labels: { env: "\u202Edorp" } } }),
      400,
      "bad_request",
      /^metadata\.labels\.env: a label value has no invisible or direction-changing characters/,
    );
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    await refused(await create({ metadata: { labels: many } }), 400, "bad_request", /^metadata\.labels: a box has at most 16 labels/);
    // Metadata is not part of the spec: inside it, it is an unknown key of the spec.
    await refused(await create({ spec: { name: "x" } }), 400, "bad_request", 'unknown key "name" in spec');
    expect((await json(await asA("/v1/boxes"))).boxes).toEqual([]);
  });

  it("keeps name and labels beside the spec (not in it nor its digest), in the answer, GET and the list; idempotent", async () => {
    const headers = { "idempotency-key": "metadata-create-1" };
    const body = { placement: { expires_after_secs: 900 }, metadata: META };
    const res = await asA("/v1/boxes", { method: "POST", json: body, headers });
    const box = await json(res);
    expect(res.status, JSON.stringify(box)).toBe(202);
    boxId = box.id;
    expect(box).toMatchObject({ state: "starting", name: META.name, labels: META.labels, created_by: { kind: "key", name: "a" } });
    expect(box.spec).not.toHaveProperty("metadata");
    expect(box.spec_digest).toBe(specDigest(normalizeSpec({})));

    // While it starts, it refuses a change as every call on a starting box does.
    await refused(await patch(asA, boxId, { name: "too soon" }), 409, "denied", /starting/);

    // The same key and body: the same box, replayed; another body under the same key is refused.
    const again = await asA("/v1/boxes", { method: "POST", json: body, headers });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await json(again)).id).toBe(boxId);
    await refused(
      await asA("/v1/boxes", { method: "POST", json: { ...body, metadata: { name: "other" } }, headers }),
      400,
      "bad_request",
      /different body/,
    );

    const ready = await waitReady(asA, boxId);
    expect(ready).toMatchObject({ state: "ready", name: META.name, labels: META.labels });
    const listed = (await json(await asA("/v1/boxes"))).boxes;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: boxId, name: META.name, labels: META.labels });
  });
});

describe("PATCH /v1/boxes/{id}", () => {
  it("renames, replaces labels, clears the name, and answers the box each time", async () => {
    let res = await patch(asA, boxId, { name: "renamed" });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: boxId, state: "ready", name: "renamed", labels: META.labels });

    res = await patch(asA, boxId, { labels: { env: "dev" } });
    expect(await json(res)).toMatchObject({ name: "renamed", labels: { env: "dev" } });

    res = await patch(asA, boxId, { name: null, labels: { b: "2", a: "" } });
    const cleared = await json(res);
    expect(cleared).not.toHaveProperty("name");
    expect(cleared.labels).toEqual({ a: "", b: "2" });

    // Nothing asked, nothing changed.
    expect(await json(await patch(asA, boxId, {}))).toMatchObject({ labels: { a: "", b: "2" } });

    res = await patch(asA, boxId, { name: "final name", labels: {} });
    expect(await json(res)).toMatchObject({ name: "final name", labels: {} });
    expect(await json(await asA(`/v1/boxes/${boxId}`))).toMatchObject({ name: "final name", labels: {} });
    expect((await json(await asA("/v1/boxes"))).boxes[0]).toMatchObject({ name: "final name", labels: {} });
  });

  it("refuses a bad body by field, unknown keys and bad JSON, and changes nothing", async () => {
    await refused(await patch(asA, boxId, { nam: "x" }), 400, "bad_request", 'unknown key "nam" in the body');
    await refused(await patch(asA, boxId, { name: "x", extra: true }), 400, "bad_request", 'unknown key "extra"');
    await refused(await patch(asA, boxId, { name: 5 }), 400, "bad_request", /^name: /);
    await refused(await patch(asA, boxId, { name: "" }), 400, "bad_request", /^name: a name needs at least one character/);
    await refused(await patch(asA, boxId, { name: " padded " }), 400, "bad_request", /^name: a name does not start or end with a space/);
    await refused(await patch(asA, boxId, { name: "bell\u0007" }), 400, "bad_request", /^name: a name has no control characters/);
    await refused(await patch(asA, boxId, { name: "\u202Ebd-dorp" }), 400, "bad_request", /^name: a name has no invisible or direction-changing characters/);
    await refused(await patch(asA, boxId, { labels: { env: "prod\uFEFF" } }), 400, "bad_request", /^labels\.env: a label value has no invisible or direction-changing characters/);
    await refused(await patch(asA, boxId, { name: "n".repeat(81) }), 400, "bad_request", /^name: a name has at most 80 characters/);
    await refused(await patch(asA, boxId, { labels: null }), 400, "bad_request", /^labels: /);
    await refused(await patch(asA, boxId, { labels: { "a b": "x" } }), 400, "bad_request", /^labels\.a b: a label key is/);
    await refused(await patch(asA, boxId, { labels: { k: "v".repeat(129) } }), 400, "bad_request", /^labels\.k: a label value has at most 128 characters/);
    await refused(await patch(asA, boxId, { labels: { k: 1 } }), 400, "bad_request", /^labels\.k: /);
    await refused(
      await asA(`/v1/boxes/${boxId}`, { method: "PATCH", body: "{not json", headers: { "content-type": "application/json" } }),
      400,
      "bad_request",
      /not valid JSON/,
    );
    expect(await json(await asA(`/v1/boxes/${boxId}`))).toMatchObject({ name: "final name", labels: {} });
    // Right-to-left scripts and emoji joined by a zero-width joiner are names like any other.
    const rtl = "\u05de\u05d7\u05e7\u05e8 \u{1F469}\u200D\u{1F4BB} \u06a9\u200C\u0647\u0627";
    expect(await json(await patch(asA, boxId, { name: rtl, labels: { team: "بحث" } }))).toMatchObject({ name: rtl, labels: { team: "بحث" } });
    expect(await json(await patch(asA, boxId, { name: "final name", labels: {} }))).toMatchObject({ name: "final name", labels: {} });
  });

  it("another workspace gets 404 (even for a bad body), a viewer 409, a console session with CSRF and the server token may", async () => {
    await refused(await patch(asB, boxId, { name: "theirs" }), 404, "not_found");
    await refused(await patch(asB, boxId, { bogus: true }), 404, "not_found");
    await refused(await patch(asB, "box_0123456789abcdef0123456789abcdef", { name: "x" }), 404, "not_found");

    const asVic = session(vic, vicCsrf);
    await refused(await asVic(`/v1/boxes/${boxId}`, { method: "PATCH", json: { name: "viewer's" } }), 409, "denied", /member role/);
    expect(await json(await asVic(`/v1/boxes/${boxId}`))).toMatchObject({ name: "final name" });

    await refused(await session(ada)(`/v1/boxes/${boxId}`, { method: "PATCH", json: { name: "no csrf" } }), 403, "forbidden");
    const byAda = await session(ada, adaCsrf)(`/v1/boxes/${boxId}`, { method: "PATCH", json: { name: "by Ada's session" } });
    expect(await json(byAda)).toMatchObject({ name: "by Ada's session" });

    const byServer = await patch(server.api, boxId, { labels: { by: "server" } });
    expect(await json(byServer)).toMatchObject({ name: "by Ada's session", labels: { by: "server" } });
  });

  it("the box's own console page renames and relabels through the same model; a viewer, another workspace, a missing token and bad labels change nothing", async () => {
    const post = async (p: Person, fields: Record<string, string>) => {
      const res = await c.form(p, `/boxes/${boxId}`, fields);
      return { status: res.status, text: await res.text() };
    };
    const now = async () => json(await asA(`/v1/boxes/${boxId}`));
    const before = await now();
    const bobCsrf = c.csrfIn(await c.page(bob, "/keys"));
    const refusals = [
      await post(vic, { intent: "rename", name: "viewer's", csrf: vicCsrf }),
      await post(bob, { intent: "rename", name: "theirs", csrf: bobCsrf }),
      await post(ada, { intent: "rename", name: "no token" }),
      await post(ada, { intent: "labels", labels: '{"Team": "web"}', csrf: adaCsrf }),
      await post(ada, { intent: "labels", labels: "{not json", csrf: adaCsrf }),
      await post(ada, { intent: "rename", name: "bell\u0007name", csrf: adaCsrf }),
    ];
    // Each is refused with what a person can act on (the form's error, as the page streams it).
    const said = refusals.map((r) => [r.status, /\\"error\\",\\"([^\\]*)/.exec(r.text)?.[1]]);
    expect(said).toEqual([
      [400, expect.stringMatching(/member role/)],
      [400, `no box ${boxId}`],
      [400, expect.stringMatching(/form is stale/)],
      [400, expect.stringMatching(/^labels\.Team: /)],
      [400, "labels: not a JSON object"],
      [400, "name: a name has no control characters"],
    ]);
    const after = await now();
    expect({ name: after.name, labels: after.labels }).toEqual({ name: before.name, labels: before.labels });

    expect((await post(ada, { intent: "rename", name: "from its page", csrf: adaCsrf })).status).toBe(200);
    expect((await post(ada, { intent: "labels", labels: JSON.stringify({ team: "web" }), csrf: adaCsrf })).status).toBe(200);
    expect(await now()).toMatchObject({ name: "from its page", labels: { team: "web" } });
    expect((await post(ada, { intent: "rename", name: "", csrf: adaCsrf })).status).toBe(200);
    expect(await now()).not.toHaveProperty("name");
  });

  it("works on a stopped box; a removed box answers 410", async () => {
    expect((await asA(`/v1/boxes/${boxId}/stop`, { method: "POST" })).status).toBe(200);
    expect(await json(await patch(asA, boxId, { name: "stopped one" }))).toMatchObject({ state: "stopped", name: "stopped one" });
    expect((await asA(`/v1/boxes/${boxId}`, { method: "DELETE", headers: { "x-holm-confirm-delete": "true" } })).status).toBe(200);
    await refused(await patch(asA, boxId, { name: "gone" }), 410, "gone");
  });
});
