import { describe, expect, it } from "vitest";
import { ApiError, ERROR_STATUS, errorResponse } from "~/utils/api-error.server";
import { safeEqual } from "~/utils/secret.server";
import { v1 } from "~/edge/route.server";
import { log } from "~/utils/log.server";

describe("error shape", () => {
  it("maps every seed code to its status", () => {
    expect(ERROR_STATUS).toMatchObject({
      bad_request: 400,
      unsupported: 400,
      not_found: 404,
      gone: 410,
      denied: 409,
      screen_unavailable: 409,
      failed: 422,
      transport: 502,
      unavailable: 503,
      timeout: 504,
      internal: 500,
    });
  });

  it("answers {code, message, retryable} and nothing else", async () => {
    const res = errorResponse(new ApiError("gone", "box x was removed"));
    expect(res.status).toBe(410);
    expect(await res.json()).toEqual({ code: "gone", message: "box x was removed", retryable: false });
  });

  it("hides an unexpected error behind `internal`", async () => {
    // The server logs it (with the detail, for the operator); not in the test's output.
    const was = log.level;
    log.level = "silent";
    try {
      const res = errorResponse(new Error("secret detail"));
      expect(res.status).toBe(500);
      const body = await res.json();
      expect(body.code).toBe("internal");
      expect(body.message).not.toContain("secret detail");
    } finally {
      log.level = was;
    }
  });

  it("an engine's refused connection is `internal`, never 'the store is not reachable'", async () => {
    // dockerode's error for a box's port the engine could not dial: its text says "connection
    // refused", but the store is not what failed (the store's refusals are ECONNREFUSED on its port).
    const was = log.level;
    log.level = "silent";
    try {
      const engine = Object.assign(new Error("(HTTP code 500) server error - dial tcp 172.18.0.5:9222: connect: connection refused"), {
        statusCode: 500,
        reason: "server error",
      });
      const res = errorResponse(engine);
      expect(res.status).toBe(500);
      const body = await res.json();
      expect(body.code).toBe("internal");
      expect(body.message).not.toContain("store");
    } finally {
      log.level = was;
    }
  });

  it("marks transport and timeout errors retryable by default", () => {
    expect(new ApiError("transport", "x").retryable).toBe(true);
    expect(new ApiError("timeout", "x").retryable).toBe(true);
    expect(new ApiError("bad_request", "x").retryable).toBe(false);
  });
});

describe("v1 route wrapper", () => {
  const route = v1({
    GET: () => ({ hello: "world" }),
    POST: () => {
      throw new ApiError("denied", "no", { retryable: true });
    },
  });
  const call = (method: string) =>
    route.loader({ request: new Request("http://x/v1/thing", { method }), params: {} });

  it("answers JSON from a handler", async () => {
    const res = await call("GET");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: "world" });
  });

  it("turns a thrown ApiError into the error body", async () => {
    const res = await call("POST");
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ code: "denied", message: "no", retryable: true });
  });

  // The seed ties each code to one status (bad_request is 400): a wrong method has its own code.
  it("answers a method it does not serve with 405, Allow and code method_not_allowed", async () => {
    const res = await call("PATCH");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    expect(await res.json()).toMatchObject({ code: "method_not_allowed", retryable: false });
    expect(route.loader.methods).toEqual(["GET", "POST"]);
  });
});

describe("constant-time compare", () => {
  it("compares secrets of any length", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
    expect(safeEqual("", "x")).toBe(false);
  });
});

describe("one status per code", () => {
  it('"each code has one status": the seed\'s codes keep the seed\'s, ours use statuses no seed code has', async () => {
    const { ERROR_STATUS } = await import("~/protocol/errors");
    const seed = { bad_request: 400, unsupported: 400, not_found: 404, gone: 410, denied: 409, screen_unavailable: 409, failed: 422, transport: 502, unavailable: 503, timeout: 504, internal: 500 };
    const seedStatuses = new Set(Object.values(seed));
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      if (code in seed) expect(status, code).toBe(seed[code as keyof typeof seed]);
      else expect(seedStatuses.has(status), `${code} ${status}`).toBe(false);
      expect(new ApiError(code as keyof typeof ERROR_STATUS, "x").status, code).toBe(status);
    }
  });
});

describe("agent paths", () => {
  it("builds every agent route's path from its table, encoding values and leaving out unset query keys", async () => {
    const { AGENT_ROUTES, agentCall, agentPath } = await import("~/protocol/agent");
    expect(agentPath("windowClose", { n: 0, w: "a/b c" })).toBe("/screens/0/windows/a%2Fb%20c");
    expect(agentPath("frame", { n: 2 }, { have: undefined, scale: 50 })).toBe("/screens/2/frame?scale=50");
    expect(agentCall("exec", {})).toEqual({ method: "POST", path: "/exec" });
    for (const [name, [method, pattern]] of Object.entries(AGENT_ROUTES)) {
      const params = Object.fromEntries([...pattern.matchAll(/:([a-z]+)/g)].map((m) => [m[1], 7]));
      const path = agentPath(name as keyof typeof AGENT_ROUTES, params as never);
      expect(path, name).toBe(pattern.replace(/:[a-z]+/g, "7"));
      expect(["GET", "POST", "PUT", "DELETE"]).toContain(method);
    }
  });
});
