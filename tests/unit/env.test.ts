import { describe, expect, it } from "vitest";
import { parseEnv } from "~/utils/env.server";

describe("environment", () => {
  it("reads HOLM_POOL as specs and sizes, and refuses bad syntax naming the variable", () => {
    const digest = "a".repeat(64);
    expect(parseEnv({ HOLM_POOL: `default=4,${digest}=2` }).HOLM_POOL).toEqual([
      { key: "default", size: 4 },
      { key: digest, size: 2 },
    ]);
    expect(parseEnv({}).HOLM_POOL).toBeUndefined();
    expect(parseEnv({}).HOLM_POOL_MAX_MEMORY).toBe("8g");
    for (const bad of ["default", "default=x", "4", "default=1,,", "abc=2", "default=1,default=2", "default=101", "default=-1"]) {
      expect(() => parseEnv({ HOLM_POOL: bad }), bad).toThrow(/HOLM_POOL: /);
    }
    expect(() => parseEnv({ HOLM_POOL_MAX_MEMORY: "lots" })).toThrow(/HOLM_POOL_MAX_MEMORY/);
  });

  it("has working defaults", () => {
    const e = parseEnv({});
    expect(e.HOLM_SERVER_ADDR).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(e.HOLM_STORAGE_BACKEND).toBe("memory");
    expect(e.HOLM_SERVER_REAP_SECS).toBe(30);
    expect(e.HOLM_SERVER_TOKEN).toBeUndefined();
  });

  it("reads HOLM_DISK_RESERVE as bytes, 4 GiB by default, 0 for no watch", () => {
    expect(parseEnv({}).HOLM_DISK_RESERVE).toBe(4 * 1024 ** 3);
    expect(parseEnv({ HOLM_DISK_RESERVE: "512m" }).HOLM_DISK_RESERVE).toBe(512 * 1024 ** 2);
    expect(parseEnv({ HOLM_DISK_RESERVE: "0" }).HOLM_DISK_RESERVE).toBe(0);
    for (const bad of ["lots", "-1g", "1t"]) expect(() => parseEnv({ HOLM_DISK_RESERVE: bad }), bad).toThrow(/HOLM_DISK_RESERVE/);
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

  it("bounds a browser profile at 2 GiB by default, as a size or bytes, and refuses a bound that is none", () => {
    expect(parseEnv({}).HOLM_PROFILE_MAX_BYTES).toBe(2 * 1024 ** 3);
    expect(parseEnv({ HOLM_PROFILE_MAX_BYTES: "500m" }).HOLM_PROFILE_MAX_BYTES).toBe(500 * 1024 ** 2);
    expect(parseEnv({ HOLM_PROFILE_MAX_BYTES: "41943040" }).HOLM_PROFILE_MAX_BYTES).toBe(41_943_040);
    for (const v of ["0", "lots", "-1g"]) expect(() => parseEnv({ HOLM_PROFILE_MAX_BYTES: v }), v).toThrow(/HOLM_PROFILE_MAX_BYTES/);
  });

  it("has box limits by default and refuses ones a box cannot run with", () => {
    const e = parseEnv({});
    expect(e.HOLM_BOX_MEMORY).toBe("2g");
    expect(e.HOLM_BOX_MEMORY_MAX).toBe("8g");
    expect(e.HOLM_BOX_PIDS).toBe(1024);
    expect(e.HOLM_WORKSPACE_BOXES).toBe(10);
    expect(e.HOLM_WORKSPACE_IMAGE_BUILDS).toBe(3);
    expect(parseEnv({ HOLM_BOX_MEMORY: "1.5g", HOLM_WORKSPACE_IMAGE_BUILDS: "0" }).HOLM_BOX_MEMORY).toBe("1.5g");
    const bad: Record<string, string>[] = [
      { HOLM_BOX_MEMORY: "2" }, // two bytes
      { HOLM_BOX_MEMORY: "lots" },
      { HOLM_BOX_MEMORY: "16g" }, // more than the default maximum
      { HOLM_BOX_MEMORY_MAX: "1g" }, // less than the default memory
      { HOLM_BOX_PIDS: "10" },
      { HOLM_WORKSPACE_BOXES: "-1" },
    ];
    for (const source of bad) {
      const name = Object.keys(source)[0]!;
      expect(() => parseEnv(source), JSON.stringify(source)).toThrow(/HOLM_BOX_MEMORY|HOLM_BOX_PIDS|HOLM_WORKSPACE_BOXES/);
      try {
        parseEnv(source);
      } catch (e) {
        expect((e as Error).message).toMatch(name === "HOLM_BOX_MEMORY_MAX" ? /HOLM_BOX_MEMORY:.*HOLM_BOX_MEMORY_MAX/ : new RegExp(name));
      }
    }
  });

  it("treats empty variables as unset", () => {
    expect(parseEnv({ HOLM_SERVER_TOKEN: "" }).HOLM_SERVER_TOKEN).toBeUndefined();
  });
});
