import { describe, expect, it } from "vitest";
import { parseEnv } from "~/utils/env.server";

describe("environment", () => {
  it("has working defaults", () => {
    const e = parseEnv({});
    expect(e.HOLM_SERVER_ADDR).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(e.HOLM_STORAGE_BACKEND).toBe("memory");
    expect(e.HOLM_SERVER_REAP_SECS).toBe(30);
    expect(e.HOLM_SERVER_TOKEN).toBeUndefined();
  });

  it("parses IPv6 and host names", () => {
    expect(parseEnv({ HOLM_SERVER_ADDR: "[::1]:9000" }).HOLM_SERVER_ADDR).toEqual({ host: "::1", port: 9000 });
    expect(parseEnv({ HOLM_SERVER_ADDR: "localhost:1" }).HOLM_SERVER_ADDR).toEqual({ host: "localhost", port: 1 });
  });

  it("names every bad variable in one clear error", () => {
    let message = "";
    try {
      parseEnv({ HOLM_SERVER_ADDR: "nope", HOLM_STORAGE_BACKEND: "mongo", HOLM_SERVER_REAP_SECS: "x" });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("invalid environment");
    for (const name of ["HOLM_SERVER_ADDR", "HOLM_STORAGE_BACKEND", "HOLM_SERVER_REAP_SECS"]) {
      expect(message).toContain(name);
    }
  });

  it("treats empty variables as unset", () => {
    expect(parseEnv({ HOLM_SERVER_TOKEN: "" }).HOLM_SERVER_TOKEN).toBeUndefined();
  });
});
