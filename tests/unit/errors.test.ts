import { describe, expect, it } from "vitest";
import { ApiError, ERROR_STATUS, errorResponse } from "~/utils/api-error.server";
import { safeEqual } from "~/utils/secret.server";
import { v1 } from "~/edge/route.server";

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
    const original = console.error;
    console.error = () => {};
    try {
      const res = errorResponse(new Error("secret detail"));
      expect(res.status).toBe(500);
      const body = await res.json();
      expect(body.code).toBe("internal");
      expect(body.message).not.toContain("secret detail");
    } finally {
      console.error = original;
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
