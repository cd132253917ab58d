import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { retryDelay } from "~/models/webhook-delivery.server";
import { signature } from "~/models/webhook-send.server";
import { parseEnv } from "~/utils/env.server";
import { blockedRange, parseWebhookUrl, resolveTarget } from "~/utils/webhook-target.server";

// The pieces of webhooks that need no server (docs/decisions/0018): which addresses are targets,
// which URLs are, the signature's exact form, the backoff, and the settings. The whole path (a
// real server, a real receiver) is tests/integration/webhooks.test.ts. No lookup here leaves the
// machine: only IP literals and "localhost" are resolved.

describe("webhook targets", () => {
  it("refuses every non-public range, IPv4 inside IPv6 included, and lets public unicast through", () => {
    const blocked = [
      "127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1",
      "100.64.0.1", "100.100.100.200", "0.0.0.0", "255.255.255.255", "224.0.0.1", "240.0.0.1",
      "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
      "2002:7f00:1::", "64:ff9b::a00:1",
      // Ranges ipaddr.js calls unicast: IPv4-compatible loopback and metadata, site-local, benchmarking, discard, local NAT64.
      "::7f00:1", "::a9fe:a9fe", "fec0::1", "198.18.0.1", "198.19.255.255", "100::1", "64:ff9b:1::7f00:1",
      // And IANA's special-purpose IPv6 ranges that are not global: benchmarking, ORCHID, documentation, SRv6 SIDs.
      "2001:2::1", "2001:10::1", "3fff::1", "3fff:fff::1", "5f00::1", "5f00:ffff::1",
    ];
    for (const ip of blocked) expect(blockedRange(ip), ip).toBeDefined();
    for (const ip of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "198.20.0.1", "2606:4700:4700::1111", "2a00:1450::1", "2001:3::1", "2001:20::1", "3fff:1000::1", "5f01::1"]) expect(blockedRange(ip), ip).toBeUndefined();
    expect(blockedRange("not-an-ip")).toBe("not an IP address");
  });

  it("takes only http and https URLs without user info or fragment", () => {
    expect(parseWebhookUrl("https://hooks.example.com/x?y=1").hostname).toBe("hooks.example.com");
    for (const [url, says] of [
      ["ftp://example.com/", "only http and https"],
      ["file:///etc/passwd", "only http and https"],
      ["gopher://127.0.0.1:6379/", "only http and https"],
      ["https://user:pw@example.com/", "no user name"],
      ["https://example.com/#x", "no #fragment"],
      ["nope", "not a URL"],
      [`https://example.com/${"a".repeat(2100)}`, "at most 2048"],
      // The WHATWG parser would drop these silently: the URL sent would not be the one shown.
      ["http://8.8.8.8/a\r\nX-Injected: 1", "no control characters"],
      ["http://8.8.8.8/a\tb", "no control characters"],
      ["http://8.8.8.8/\u007f", "no control characters"],
      [" http://8.8.8.8/a", "no space before or after"],
      ["http://8.8.8.8/a ", "no space before or after"],
      ["http://8.8.8.8:0/", "port 0"],
    ]) {
      expect(() => parseWebhookUrl(url!), url).toThrow(says!);
    }
  });

  it("resolves a name once and refuses it when any address is private; the allowance lets it through pinned", async () => {
    // A name's addresses are not told (webhook create would be a DNS lookup of internal names).
    await expect(resolveTarget("http://localhost:1/x", false)).rejects.toThrow(/^url: "localhost" does not resolve to a public address; .*HOLM_WEBHOOK_ALLOW_PRIVATE=1$/);
    // A name that does not resolve gets the same words (which internal names exist is not told).
    await expect(resolveTarget("http://no-such-host.invalid/x", false)).rejects.toThrow(/^url: "no-such-host.invalid" does not resolve to a public address; .*HOLM_WEBHOOK_ALLOW_PRIVATE=1$/);
    await expect(resolveTarget("http://localhost:1/x", false)).rejects.not.toThrow(/127\.0\.0\.1|::1/);
    await expect(resolveTarget("http://[::ffff:192.168.0.1]/", false)).rejects.toThrow(/private/);
    await expect(resolveTarget("http://2130706433/", false)).rejects.toThrow(/loopback/); // 127.0.0.1 written as a number
    await expect(resolveTarget("http://0x7f.1/", false)).rejects.toThrow(/loopback/);
    expect(await resolveTarget("http://127.0.0.1:9/x", true)).toMatchObject({ address: "127.0.0.1", family: 4 });
    expect(await resolveTarget("http://[::1]:9/x", true)).toMatchObject({ address: "::1", family: 6 });
    expect(await resolveTarget("http://8.8.8.8/x", false)).toMatchObject({ address: "8.8.8.8" });
  });

  it("signs HMAC-SHA256 of t.body, hex, in the header's t=…,v1=… form", () => {
    const body = '{"seq":1,"kind":"box.ready"}';
    const mac = createHmac("sha256", "whsec_test").update(`1700000000.${body}`).digest("hex");
    expect(signature("whsec_test", 1_700_000_000, body)).toBe(`t=1700000000,v1=${mac}`);
  });

  it("during a rotation signs with the new secret and the previous one: one v1= each, the new first", () => {
    const body = '{"seq":2,"kind":"box.ready"}';
    const mac = (s: string) => createHmac("sha256", s).update(`1700000000.${body}`).digest("hex");
    expect(signature(["whsec_new", "whsec_old"], 1_700_000_000, body)).toBe(`t=1700000000,v1=${mac("whsec_new")},v1=${mac("whsec_old")}`);
  });

  it("backs off exponentially with jitter, capped at an hour", () => {
    expect(retryDelay(1, 1000, () => 0.5)).toBe(1000);
    expect(retryDelay(2, 1000, () => 0.5)).toBe(2000);
    expect(retryDelay(5, 1000, () => 0.5)).toBe(16_000);
    expect(retryDelay(1, 1000, () => 0)).toBe(500);
    expect(retryDelay(1, 1000, () => 0.999)).toBe(1499);
    expect(retryDelay(40, 30_000, () => 0.5)).toBe(3_600_000);
  });

  it("reads the webhook settings, refusing bad values", () => {
    const e = parseEnv({});
    expect([e.HOLM_WEBHOOK_ALLOW_PRIVATE, e.HOLM_WEBHOOK_RETRY_BASE_MS, e.HOLM_WEBHOOK_TIMEOUT_MS]).toEqual([false, 30_000, 10_000]);
    expect(parseEnv({ HOLM_WEBHOOK_ALLOW_PRIVATE: "1" }).HOLM_WEBHOOK_ALLOW_PRIVATE).toBe(true);
    expect(() => parseEnv({ HOLM_WEBHOOK_ALLOW_PRIVATE: "yes" })).toThrow(/HOLM_WEBHOOK_ALLOW_PRIVATE/);
    expect(() => parseEnv({ HOLM_WEBHOOK_RETRY_BASE_MS: "1" })).toThrow(/HOLM_WEBHOOK_RETRY_BASE_MS/);
  });
});
