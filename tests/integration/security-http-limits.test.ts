import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient } from "../support/console";
import { offerChunked, peakRss, raw } from "../support/http";
import { type TestServer, json, removeTestBoxes, startServer } from "../support/server";

// The smaller holes at the HTTP edge: bodies without a length, off-site `next`, the cookie behind
// TLS, `Origin: null` on console forms, and log-in limits under parallel attempts.

let server: TestServer;
let c: ReturnType<typeof consoleClient>;
let ada: { cookie: string };

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

beforeAll(async () => {
  server = await startServer();
  c = consoleClient(server);
  ada = await c.signUp("ada@example.com", "A");
});

afterAll(async () => {
  await server?.stop();
  await removeTestBoxes();
});

describe("request bodies", () => {
  it("cuts a chunked multi-GB POST to /login off at the cap with 413, without buffering it", async () => {
    const before = peakRss(server.pid);
    const out = await offerChunked(server.base, "/login", { "content-type": "application/x-www-form-urlencoded" }, { offer: 4 * GiB, giveUpAfter: 512 * MiB });
    expect(out.status, `answered after ${out.sent} bytes`).toBe(413);
    expect(JSON.parse(out.text)).toMatchObject({ code: "too_large", retryable: false });
    expect(out.sent).toBeLessThan(64 * MiB);
    expect(peakRss(server.pid) - before).toBeLessThan(48 * MiB);
    // The server goes on serving.
    expect((await fetch(`${server.base}/v1/health`)).status).toBe(200);
  });

  it("cuts a chunked multi-GB POST to /v1 off at its cap with 413 and launches nothing", async () => {
    const out = await offerChunked(
      server.base,
      "/v1/boxes",
      { "content-type": "application/json", authorization: `Bearer ${server.token}` },
      { offer: 4 * GiB, giveUpAfter: 1 * GiB },
    );
    expect(out.status, `answered after ${out.sent} bytes`).toBe(413);
    expect(JSON.parse(out.text)).toMatchObject({ code: "too_large" });
    expect(out.sent).toBeLessThan(160 * MiB);
    expect((await json(await server.api("/v1/boxes"))).boxes).toEqual([]);
  });

  it("refuses a declared length over the cap before reading the body", async () => {
    for (const [p, type] of [["/login", "application/x-www-form-urlencoded"], ["/v1/boxes", "application/json"]] as const) {
      const res = await raw(server.base, "POST", p, { "content-type": type, "content-length": String(10 * GiB), authorization: `Bearer ${server.token}` });
      expect(res.status, p).toBe(413);
    }
  });
});

describe("log-in redirects", () => {
  const offSite = [
    "/\\evil.example",
    "//evil.example",
    "/\\\\evil.example",
    "\\/evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "/%09/evil.example",
    "https://evil.example",
    "https:evil.example",
    "http:/evil.example",
    "//evil.example/%2e%2e",
    "javascript:alert(1)",
    " //evil.example",
    "evil.example",
  ];

  it("never sends a signed-in person off-site from ?next=", async () => {
    const origin = new URL(server.base).origin;
    for (const next of offSite) {
      const res = await fetch(`${server.base}/login?next=${encodeURIComponent(next)}`, { headers: { cookie: ada.cookie }, redirect: "manual" });
      expect(res.status, next).toBe(302);
      const to = new URL(res.headers.get("location")!, server.base);
      expect(to.origin, `${next} → ${res.headers.get("location")}`).toBe(origin);
    }
    // A path on this server is kept.
    const ok = await fetch(`${server.base}/login?next=${encodeURIComponent("/keys?x=1#k")}`, { headers: { cookie: ada.cookie }, redirect: "manual" });
    expect(ok.headers.get("location")).toBe("/keys?x=1#k");
  });

  it("never sends a person off-site after logging in", async () => {
    const origin = new URL(server.base).origin;
    for (const next of offSite.slice(0, 6)) {
      const res = await c.form(undefined, "/login", { email: "ada@example.com", password: "correct horse battery", next });
      expect(res.status, next).toBe(302);
      expect(new URL(res.headers.get("location")!, server.base).origin, `${next} → ${res.headers.get("location")}`).toBe(origin);
    }
  });
});

describe("console forms", () => {
  it("refuse Origin: null and a cross-site Sec-Fetch-Site", async () => {
    const refused: Record<string, string>[] = [{ origin: "null" }, { "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }];
    for (const headers of refused) {
      const csrf = c.csrfIn(await c.page(ada, "/keys"));
      const res = await c.form(ada, "/keys?index", { intent: "create", name: "sneaky", csrf }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      const login = await c.form(undefined, "/login", { email: "ada@example.com", password: "correct horse battery", next: "/" }, headers);
      expect(login.status, JSON.stringify(headers)).toBe(403);
      expect(login.headers.get("set-cookie"), JSON.stringify(headers)).toBeNull();
    }
    expect(await c.page(ada, "/keys")).not.toContain("sneaky");
    // The console's own origin goes through.
    const csrf = c.csrfIn(await c.page(ada, "/keys"));
    const own = await c.form(ada, "/keys?index", { intent: "create", name: "mine", csrf }, { origin: server.base, "sec-fetch-site": "same-origin" });
    expect(own.status).toBe(200);
  });
});

describe("behind TLS (HOLM_PUBLIC_URL https)", () => {
  it("marks the session cookie Secure and accepts the public name and origin", async () => {
    const tls = await startServer({ HOLM_PUBLIC_URL: "https://holm.example.test" });
    try {
      const tc = consoleClient(tls);
      const res = await tc.form(undefined, "/signup", { name: "t", email: "t@example.com", password: "correct horse battery", confirm: "correct horse battery", workspace: "T" });
      expect(res.status).toBe(302);
      const set = res.headers.get("set-cookie")!;
      expect(set).toMatch(/^holm_session=/);
      expect(set).toMatch(/;\s*Secure/i);
      const person = { cookie: set.split(";")[0]! };
      // A TLS proxy on loopback that passes the public Host through and says https: pages and
      // forms from the public origin are served (README, "Behind a proxy").
      const proxied: Record<string, string>[] = [{ host: "holm.example.test", "x-forwarded-proto": "https" }];
      for (const headers of proxied) {
        expect((await raw(tls.base, "GET", "/keys", { ...headers, cookie: person.cookie })).status, JSON.stringify(headers)).toBe(200);
        const csrf = tc.csrfIn(await tc.page(person, "/keys"));
        const made = await raw(
          tls.base,
          "POST",
          "/keys?index",
          { ...headers, cookie: person.cookie, origin: "https://holm.example.test", "content-type": "application/x-www-form-urlencoded" },
          new URLSearchParams({ intent: "create", name: `via ${headers.host ?? "rewrite"}`, csrf }).toString(),
        );
        expect(made.status, `${JSON.stringify(headers)}: ${made.text.slice(0, 300)}`).toBe(200);
        expect(made.text).toMatch(/holm_sk_/);
      }
      const logout = await tc.form(person, "/logout", { csrf: tc.csrfIn(await tc.page(person, "/keys")) });
      expect(logout.headers.get("set-cookie")).toMatch(/;\s*Secure/i);
    } finally {
      await tls.stop();
    }
  });
});

describe("log-in limits", () => {
  it("count each attempt before the password is checked, so parallel guesses cannot exceed the limit", async () => {
    // Last in this file: it locks ada's account out for a while.
    const tries = await Promise.all(
      Array.from({ length: 24 }, () => c.form(undefined, "/login", { email: "ada@example.com", password: "wrong password!!", next: "/" }).then((r) => r.text())),
    );
    const checked = tries.filter((t) => t.includes("the email or password is not right")).length;
    const limited = tries.filter((t) => t.includes("too many failed attempts")).length;
    expect(checked + limited).toBe(24);
    expect(checked).toBeLessThanOrEqual(8);
  });
});
