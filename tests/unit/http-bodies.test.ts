import { describe, expect, it } from "vitest";
import { answerTextOf, jsonResponse } from "~/utils/http-bodies.server";

// jsonResponse makes its body stream only when asked (http-bodies.server.ts): every way of reading
// it must give what Response.json would, and read once only, as a Response's body is.

const BODY = { ok: true, results: [{ ok: true, note: "é ✓ 😀" }] };

describe("jsonResponse", () => {
  it("reads as Response.json does: text, json, arrayBuffer, blob, the stream, status and headers", async () => {
    const want = Response.json(BODY, { status: 201, headers: { "x-a": "1" } });
    const wantText = await want.clone().text();
    const make = () => jsonResponse(BODY, { status: 201, headers: { "x-a": "1" } });
    const r = make();
    expect([r.status, r.headers.get("content-type"), r.headers.get("x-a"), r.bodyUsed]).toEqual([201, want.headers.get("content-type"), "1", false]);
    expect(answerTextOf(r)).toBe(wantText);
    expect(await make().text()).toBe(wantText);
    expect(await make().json()).toEqual(BODY);
    expect(Buffer.from(await make().arrayBuffer()).toString()).toBe(wantText);
    const blob = await make().blob();
    expect([blob.type, await blob.text()]).toEqual(["application/json", wantText]);
    // What React Router's adapter reads: the body as a stream.
    const s = make();
    expect(s.body).not.toBeNull();
    expect(await new Response(s.body).text()).toBe(wantText);
    expect(s.bodyUsed).toBe(true);
  });

  it("is read once; a clone before that reads on its own", async () => {
    const r = jsonResponse(BODY);
    const copy = r.clone();
    expect(await r.text()).toContain('"ok":true');
    expect(r.bodyUsed).toBe(true);
    await expect(r.text()).rejects.toThrow(TypeError);
    expect(() => r.clone()).toThrow(TypeError);
    expect(await copy.json()).toEqual(BODY);
    expect(answerTextOf(copy)).toBe(JSON.stringify(BODY));
    expect(r).toBeInstanceOf(Response);
  });
});
