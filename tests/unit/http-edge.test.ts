import { describe, expect, it } from "vitest";
import { crossSiteReason, hostAllowed, isApiPath, originAllowed, parseHost } from "../../server/http-edge";
import { safeNext } from "~/edge/next-path.server";
import { isLoopback } from "~/edge/peer.server";

// The edge's pure rules. env() is read lazily, so this file's settings are the ones it sees.
process.env.HOLM_SERVER_ADDR = "127.0.0.1:8080";
process.env.HOLM_PUBLIC_URL = "https://holm.example.test";

const local = { address: "127.0.0.1", port: 8080 };

describe("Host", () => {
  it("parses names, IPv6 literals and ports; refuses anything else", () => {
    expect(parseHost("LocalHost:8080")).toEqual({ name: "localhost", port: 8080 });
    expect(parseHost("[::1]:8080")).toEqual({ name: "[::1]", port: 8080 });
    expect(parseHost("example.test")).toEqual({ name: "example.test", port: undefined });
    for (const bad of [undefined, "", "a b", "127.0.0.1:8080@evil.example", "evil.example/x", "x:y", "[::1", "127.0.0.1:8080:1"]) {
      expect(parseHost(bad), String(bad)).toBeUndefined();
    }
  });

  it("answers to loopback names and the listen address with its port, and to the public host", () => {
    for (const ok of ["127.0.0.1:8080", "localhost:8080", "[::1]:8080", "holm.example.test", "holm.example.test:443"]) {
      expect(hostAllowed(ok, local), ok).toBe(true);
    }
    for (const bad of ["rebind.example:8080", "127.0.0.1:8081", "localhost", "holm.example.test:8080", "127.0.0.1.nip.io:8080", "0x7f000001:8080", undefined]) {
      expect(hostAllowed(bad, local), String(bad)).toBe(false);
    }
  });

  it("answers to the address a connection reached when listening on every interface", () => {
    expect(hostAllowed("192.0.2.2:8080", { address: "::ffff:192.0.2.2", port: 8080 })).toBe(true);
    expect(hostAllowed("[fe80::1]:8080", { address: "fe80::1", port: 8080 })).toBe(true);
    expect(hostAllowed("192.0.2.3:8080", { address: "192.0.2.2", port: 8080 })).toBe(false);
  });
});

describe("Origin and Sec-Fetch-Site", () => {
  it("is same-origin only for this server as reached, or HOLM_PUBLIC_URL's origin", () => {
    expect(originAllowed("http://127.0.0.1:8080", "127.0.0.1:8080")).toBe(true);
    expect(originAllowed("https://holm.example.test", "127.0.0.1:8080")).toBe(true);
    for (const bad of ["null", "http://127.0.0.1:8081", "http://localhost:8080", "http://evil.example", "https://holm.example.test:8443", "file://", "not a url", "chrome-extension://abc"]) {
      expect(originAllowed(bad, "127.0.0.1:8080"), bad).toBe(false);
    }
  });

  it("refuses cross-site and same-site fetches, Origin: null and foreign origins; allows tools with neither", () => {
    expect(crossSiteReason({ host: "127.0.0.1:8080" })).toBeUndefined();
    expect(crossSiteReason({ host: "127.0.0.1:8080", "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:8080" })).toBeUndefined();
    expect(crossSiteReason({ host: "127.0.0.1:8080", "sec-fetch-site": "none" })).toBeUndefined();
    expect(crossSiteReason({ host: "127.0.0.1:8080", "sec-fetch-site": "cross-site" })).toMatch(/cross-site/);
    expect(crossSiteReason({ host: "127.0.0.1:8080", "sec-fetch-site": "same-site" })).toMatch(/same-site/);
    expect(crossSiteReason({ host: "127.0.0.1:8080", origin: "null" })).toMatch(/Origin: null/);
    expect(crossSiteReason({ host: "127.0.0.1:8080", origin: "http://evil.example" })).toMatch(/evil\.example/);
  });
});

describe("safeNext", () => {
  it("keeps a path on this server", () => {
    expect(safeNext("/keys?x=1#k")).toBe("/keys?x=1#k");
    expect(safeNext("/invite/abc")).toBe("/invite/abc");
    expect(safeNext("/%5Cevil.example")).toBe("/%5Cevil.example");
  });

  it("never leaves the site, however the path is spelled", () => {
    for (const off of [null, "", "//evil.example", "/\\evil.example", "/\\\\evil.example", "\\/evil.example", "/\t/evil.example", "/\n/evil.example", "/.//evil.example", "/./\\evil.example", "https://evil.example", "https:evil.example", "javascript:alert(1)", " //evil.example", "evil.example"]) {
      const to = new URL(safeNext(off), "http://holm.test");
      expect(to.origin, JSON.stringify(off)).toBe("http://holm.test");
    }
  });
});

describe("isLoopback", () => {
  it("knows loopback peers in every spelling, and nothing else", () => {
    for (const a of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]) expect(isLoopback(a), a).toBe(true);
    for (const a of [undefined, "", "192.0.2.2", "::ffff:192.0.2.2", "172.17.0.1", "fe80::1", "128.0.0.1"]) expect(isLoopback(a), String(a)).toBe(false);
  });
});

describe("isApiPath", () => {
  it("tells /v1 and /mcp as the router reads the path: any case, ASCII escapes decoded, dot segments resolved, slashes merged", () => {
    for (const p of ["/v1", "/v1/boxes", "/V1/boxes", "/%761/boxes", "/%56%31/boxes", "/x/../V1/boxes", "/%2e%2e/v1/x", "//v1/boxes", "/v1%2Fboxes", "/V1/boxes/%FF", "/mcp", "/MCP", "/Mcp/"]) {
      expect(isApiPath(p), p).toBe(true);
    }
    for (const p of ["/", "/boxes/box_1", "/v10/x", "/v1x", "/keys", "/mcpx", "/%FF", "/docs/v1/boxes"]) {
      expect(isApiPath(p), p).toBe(false);
    }
  });
});
