import { createHmac } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "~/models/actor";

// The server key comes from the environment, read once: set it before the module loads.
process.env.HOLM_SECRET_KEY = "unit-test-secret-key-0123456789abcdef";
const t = await import("~/models/ticket.server");
const { derive } = await import("~/utils/secret.server");

const BOX = "box_0123456789abcdef0123456789abcdef";
const OTHER = "box_fedcba9876543210fedcba9876543210";
const server: Actor = { kind: "server" };
const ws = (role: "owner" | "admin" | "member" | "viewer", extra: Record<string, string> = {}) =>
  ({ kind: "workspace", workspaceId: "ws_1", role, via: "key", ...extra }) as Actor;

function catchErr(fn: () => unknown): any {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a refusal");
}

beforeAll(() => {
  expect(process.env.HOLM_SECRET_KEY).toBeDefined();
});

describe("issuing", () => {
  it("gives the server and every role but viewer a control ticket, valid 15 minutes", () => {
    const now = 1_700_000_000_000;
    for (const actor of [server, ws("owner"), ws("admin"), ws("member")]) {
      const issued = t.issueTicket(actor, { id: BOX }, 0, undefined, { now });
      expect(issued.mode).toBe("control");
      expect(issued.expires_at_ms).toBe(now + 15 * 60_000);
      expect(issued.ticket).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      const claims = t.verifyTicket(issued.ticket, BOX, 0, "control", now + 1000);
      expect(claims).toMatchObject({ box_id: BOX, screen: 0, mode: "control", expires_at_ms: now + 15 * 60_000 });
      expect(t.verifyTicket(issued.ticket, BOX, 0, "view", now + 1000).mode).toBe("control");
    }
  });

  it("gives the viewer role a view ticket and refuses it control", () => {
    const issued = t.issueTicket(ws("viewer"), { id: BOX }, 1);
    expect(issued.mode).toBe("view");
    expect(t.verifyTicket(issued.ticket, BOX, 1, "view").mode).toBe("view");
    expect(catchErr(() => t.issueTicket(ws("viewer"), { id: BOX }, 1, "control"))).toMatchObject({ code: "denied" });
  });

  it("issues a lower mode when asked", () => {
    expect(t.issueTicket(ws("member"), { id: BOX }, 0, "view").mode).toBe("view");
    expect(t.issueTicket(server, { id: BOX }, 0, "control").mode).toBe("control");
  });

  it("records who it was issued to, and a fresh nonce each time", () => {
    const issuer = (a: Actor) => t.verifyTicket(t.issueTicket(a, { id: BOX }, 0).ticket, BOX, 0, "view").issuer;
    expect(issuer(server)).toBe("server");
    expect(issuer(ws("member", { via: "session", userId: "usr_1" } as never))).toBe("user:usr_1");
    expect(issuer(ws("member", { keyId: "key_9" }))).toBe("key:key_9");
    const a = t.verifyTicket(t.issueTicket(server, { id: BOX }, 0).ticket, BOX, 0, "view");
    const b = t.verifyTicket(t.issueTicket(server, { id: BOX }, 0).ticket, BOX, 0, "view");
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.nonce.length).toBeGreaterThanOrEqual(20);
  });
});

describe("sessions and takeovers", () => {
  it("names the console session by a tag, never its id", () => {
    const sessionId = "a".repeat(64);
    const person = ws("member", { via: "session", userId: "usr_1", sessionId } as never);
    const issued = t.issueTicket(person, { id: BOX }, 0);
    const claims = t.verifyTicket(issued.ticket, BOX, 0, "control");
    expect(claims.session_tag).toBe(t.sessionTag(sessionId));
    expect(Buffer.from(issued.ticket.split(".")[0]!, "base64url").toString()).not.toContain(sessionId);
    expect(t.sessionTag("b".repeat(64))).not.toBe(claims.session_tag);
    // A key's ticket has no session.
    expect(t.verifyTicket(t.issueTicket(ws("member", { keyId: "key_1" }), { id: BOX }, 0).ticket, BOX, 0, "view").session_tag).toBeUndefined();
  });

  it("while a person holds the screen: control answers 409 denied (retryable); no mode gets view", () => {
    const why = "a person has control of screen 0";
    expect(catchErr(() => t.issueTicket(server, { id: BOX }, 0, "control", { controlBlocked: why }))).toMatchObject({
      code: "denied",
      status: 409,
      retryable: true,
      message: why,
    });
    expect(t.issueTicket(server, { id: BOX }, 0, undefined, { controlBlocked: why }).mode).toBe("view");
    expect(t.issueTicket(server, { id: BOX }, 0, "view", { controlBlocked: why }).mode).toBe("view");
  });
});

describe("refusing", () => {
  const good = () => t.issueTicket(server, { id: BOX }, 0).ticket;

  // The seed's table: a code has one status. A good ticket asking for what it does not allow is
  // `denied` 409; anything that is not a live credential of this server is `unauthorized` 401.
  it("a view ticket used for control: denied, 409", () => {
    const view = t.issueTicket(server, { id: BOX }, 0, "view").ticket;
    const err = catchErr(() => t.verifyTicket(view, BOX, 0, "control"));
    expect(err).toMatchObject({ code: "denied", status: 409, retryable: false });
  });

  it("another box or another screen: denied, 409", () => {
    expect(catchErr(() => t.verifyTicket(good(), OTHER, 0, "view"))).toMatchObject({ code: "denied", status: 409 });
    expect(catchErr(() => t.verifyTicket(good(), BOX, 1, "view"))).toMatchObject({ code: "denied", status: 409 });
  });

  it("expired: unauthorized, 401 (at the expiry instant too)", () => {
    const past = t.signTicket({ box_id: BOX, screen: 0, mode: "control", issuer: "server", expires_at_ms: Date.now() - 1 });
    expect(catchErr(() => t.verifyTicket(past, BOX, 0, "view"))).toMatchObject({ code: "unauthorized", status: 401 });
    const issued = t.issueTicket(server, { id: BOX }, 0, undefined, { now: 1000 });
    expect(() => t.verifyTicket(issued.ticket, BOX, 0, "view", issued.expires_at_ms - 1)).not.toThrow();
    expect(catchErr(() => t.verifyTicket(issued.ticket, BOX, 0, "view", issued.expires_at_ms)).message).toMatch(/expired/);
  });

  it("a lifetime longer than the server allows: unauthorized", () => {
    const long = t.signTicket({ box_id: BOX, screen: 0, mode: "control", issuer: "server", expires_at_ms: Date.now() + 24 * 3600_000 });
    expect(catchErr(() => t.verifyTicket(long, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
  });

  it("forged: a changed payload, a changed MAC, another key", () => {
    const [part, mac] = good().split(".") as [string, string];
    // Payload rewritten to another box (and upgraded to control) with the original MAC.
    const claims = JSON.parse(Buffer.from(part, "base64url").toString());
    const rewritten = Buffer.from(JSON.stringify({ ...claims, b: OTHER })).toString("base64url");
    expect(catchErr(() => t.verifyTicket(`${rewritten}.${mac}`, OTHER, 0, "view"))).toMatchObject({ code: "unauthorized", status: 401 });
    const viewPart = t.issueTicket(server, { id: BOX }, 0, "view").ticket.split(".")[0]!;
    const upgraded = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(viewPart, "base64url").toString()), m: "c" })).toString("base64url");
    expect(catchErr(() => t.verifyTicket(`${upgraded}.${mac}`, BOX, 0, "control"))).toMatchObject({ code: "unauthorized" });
    // One character of the MAC flipped.
    const flipped = mac[0] === "A" ? `B${mac.slice(1)}` : `A${mac.slice(1)}`;
    expect(catchErr(() => t.verifyTicket(`${part}.${flipped}`, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
    // The last character's spare bits changed: the same MAC bytes when decoded, but not the ticket issued.
    const last = mac.at(-1)!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const twin = alphabet[alphabet.indexOf(last) ^ 1]!;
    expect(Buffer.from(`${mac.slice(0, -1)}${twin}`, "base64url").equals(Buffer.from(mac, "base64url"))).toBe(true);
    expect(catchErr(() => t.verifyTicket(`${part}.${mac.slice(0, -1)}${twin}`, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
    // Signed with a key that is not the server's.
    const wrong = createHmac("sha256", "some-other-key").update(part).digest("base64url");
    expect(catchErr(() => t.verifyTicket(`${part}.${wrong}`, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
    // The raw server key instead of the derived one.
    const raw = createHmac("sha256", process.env.HOLM_SECRET_KEY!).update(part).digest("base64url");
    expect(catchErr(() => t.verifyTicket(`${part}.${raw}`, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
  });

  it("not a ticket at all: unauthorized (as a malformed bearer token is)", () => {
    for (const junk of ["", "abc", "a.b", `${"x".repeat(20)}.${"y".repeat(42)}`, `${good()}.extra`, `${good()} `, "x".repeat(5000)]) {
      expect(catchErr(() => t.verifyTicket(junk, BOX, 0, "view")), junk.slice(0, 30)).toMatchObject({ code: "unauthorized" });
    }
    expect(catchErr(() => t.verifyTicket(undefined as never, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
  });

  it("a well-signed payload that is not a ticket: unauthorized", () => {
    const part = Buffer.from(JSON.stringify({ v: 2, hello: "world" })).toString("base64url");
    const mac = createHmac("sha256", derive("viewer-ticket")).update(part).digest("base64url");
    expect(catchErr(() => t.verifyTicket(`${part}.${mac}`, BOX, 0, "view"))).toMatchObject({ code: "unauthorized" });
  });
});
