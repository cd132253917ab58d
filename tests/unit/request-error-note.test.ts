import { describe, expect, it } from "vitest";
import { v1 } from "../../app/edge/route.server";
import type { RequestNote } from "../../app/utils/log.server";

// A /v1 answer of 500 says on the request's own log line (which names the route and the box)
// what failed: an operator reading the line of a failed call finds the cause there, not only on
// a separate "internal error" line with nothing to tie it to the call (server/request-log.ts).

describe("a /v1 route that fails", () => {
  it("puts the error's message on the request's note for a 5xx answer", async () => {
    const route = v1({
      POST: () => {
        throw new Error("(HTTP code 404) no such container - No such container: abc");
      },
    });
    const note: RequestNote = {};
    const res = await route.action({ request: new Request("http://h/v1/boxes/box_00000000/resume", { method: "POST" }), params: {}, context: { note } });
    expect(res.status).toBe(500);
    expect(note.error).toBe("(HTTP code 404) no such container - No such container: abc");
  });

  it("leaves it out for a refusal (4xx), which is the caller's answer, not a failure", async () => {
    const route = v1({ GET: () => ({ ok: true }) });
    const note: RequestNote = {};
    const res = await route.action({ request: new Request("http://h/v1/x", { method: "DELETE" }), params: {}, context: { note } });
    expect(res.status).toBe(405);
    expect(note.error).toBeUndefined();
  });
});
