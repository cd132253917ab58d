import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { makeLogger } from "~/utils/log.server";
import { routePattern } from "../../server/request-log";

// The logger as the server makes it, on a stream of the test's: what a line holds, and that the
// redaction backstop replaces known secret fields wherever a caller put them.

function capture(level = "info") {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: makeLogger({ level, destination }), lines };
}

describe("logger", () => {
  it("writes one JSON object a line, with the level's name", () => {
    const { log, lines } = capture();
    log.info({ box: "box_1" }, "box ready");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "info", box: "box_1", msg: "box ready" });
    expect(typeof lines[0]!.time).toBe("number");
  });

  it("redacts secret fields at the top level and under the objects callers log whole", () => {
    const { log, lines } = capture();
    const secret = "s3cr3t-value-never-logged";
    log.info(
      {
        password: secret,
        token: secret,
        authorization: `Bearer ${secret}`,
        headers: { authorization: `Bearer ${secret}`, cookie: `holm_session=${secret}`, "set-cookie": secret },
        step: { type: "type", text: secret },
        file: { path: "/tmp/x", data_base64: secret },
        secrets: { ca: secret },
        keep: "this stays",
      },
      "a careless line",
    );
    const raw = JSON.stringify(lines[0]);
    expect(raw).not.toContain(secret);
    expect(lines[0]).toMatchObject({ password: "[redacted]", step: { type: "type", text: "[redacted]" }, keep: "this stays" });
  });

  it("keeps an error's message and stack under err", () => {
    const { log, lines } = capture();
    log.error({ err: new Error("the engine went away") }, "launch failed");
    expect(lines[0]).toMatchObject({ level: "error", err: { type: "Error", message: "the engine went away" } });
    expect(String((lines[0]!.err as { stack: string }).stack)).toContain("log.test.ts");
  });

  it("writes nothing below its level", () => {
    const { log, lines } = capture("warn");
    log.info("not written");
    log.debug("not written");
    log.warn("written");
    expect(lines.map((l) => l.msg)).toEqual(["written"]);
  });
});

describe("a request's route pattern", () => {
  it("puts each path parameter's name where its value was, in order", () => {
    expect(routePattern("/v1/boxes/box_ab12/screens/0/actions", { id: "box_ab12", screen: "0" })).toBe("/v1/boxes/:id/screens/:screen/actions");
    // Two parameters with one value: each takes its own segment.
    expect(routePattern("/v1/boxes/b1/screens/0/windows/0/focus", { id: "b1", screen: "0", window: "0" })).toBe(
      "/v1/boxes/:id/screens/:screen/windows/:window/focus",
    );
    expect(routePattern("/v1/boxes/box%20x/trace", { id: "box x" })).toBe("/v1/boxes/:id/trace");
  });

  it("replaces a splat and the token before it", () => {
    expect(routePattern("/v1/cdp/tok_secret_abc/devtools/page/123", { token: "tok_secret_abc", "*": "page/123" })).toBe("/v1/cdp/:token/devtools/*");
  });

  it("without parameters, hides segments that may be ids or tokens", () => {
    expect(routePattern("/invite/abcdefghijklmnopqrstuvwx")).toBe("/invite/:id");
    expect(routePattern("/boxes/box_0a1b2c3d4e/trace")).toBe("/boxes/:id/trace");
    expect(routePattern("/members")).toBe("/members");
    expect(routePattern("/assets/entry.client-AbC123.js")).toBe("/assets/*");
  });
});
