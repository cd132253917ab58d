import { describe, expect, it } from "vitest";
import { DIRECT_TICKET_TTL_MS, directViewerPassword, mayDriveHeld, openDirectTicket, signDirectTicket } from "../../app/protocol/direct-viewer";

// The wire of direct viewer sockets (ADR 0029) that server and box must agree on.

const SECRET = "c2VjcmV0LW9mLWJveC1vbmU";
const NOW = 1_800_000_000_000;
const claims = { box: "box_1", screen: 0, mode: "control" as const, issuer: "key:k1", expires_at_ms: NOW + 60_000, issued_at_ms: NOW - 1 };

describe("direct tickets", () => {
  it("open with the secret they were signed with, for their box, before they expire", () => {
    expect(openDirectTicket(SECRET, signDirectTicket(SECRET, claims), "box_1", NOW)).toEqual(claims);
    expect(openDirectTicket(SECRET, signDirectTicket(SECRET, claims), "box_1", NOW + 60_000)).toMatch(/expired/);
    expect(openDirectTicket(SECRET, signDirectTicket(SECRET, claims), "box_2", NOW)).toMatch(/another box/);
    expect(openDirectTicket("another-secret-entirely", signDirectTicket(SECRET, claims), "box_1", NOW)).toMatch(/not issued for this box/);
    expect(openDirectTicket(SECRET, signDirectTicket(SECRET, { ...claims, expires_at_ms: NOW + DIRECT_TICKET_TTL_MS + 120_000 }), "box_1", NOW)).toMatch(/lifetime/);
  });

  it("refuse a changed payload, a changed MAC, no ticket, and a box without its secret yet", () => {
    const t = signDirectTicket(SECRET, claims);
    const [part, mac] = t.split(".") as [string, string];
    const other = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(part, "base64url").toString()), mode: "control", screen: 1 })).toString("base64url");
    expect(openDirectTicket(SECRET, `${other}.${mac}`, "box_1", NOW)).toMatch(/not issued/);
    expect(openDirectTicket(SECRET, `${part}.${mac.slice(0, -1)}${mac.endsWith("A") ? "B" : "A"}`, "box_1", NOW)).toMatch(/not issued/);
    expect(openDirectTicket(SECRET, null, "box_1", NOW)).toMatch(/missing/);
    expect(openDirectTicket("", t, "box_1", NOW)).toMatch(/no secret/);
  });

  it("the password is 8 printable characters, the same for one secret, another for another", () => {
    expect(directViewerPassword(SECRET)).toMatch(/^[!-~]{8}$/);
    expect(directViewerPassword(SECRET)).toBe(directViewerPassword(SECRET));
    expect(directViewerPassword(SECRET)).not.toBe(directViewerPassword(`${SECRET}x`));
  });
});

describe("who may drive a held screen", () => {
  it("a person's exclusive takeover is theirs alone; an agent's hands the screen to people; none: anyone", () => {
    expect(mayDriveHeld(undefined, "key:k1")).toBe(true);
    expect(mayDriveHeld({ by: "user:u1", exclusive: false }, "key:k1")).toBe(true);
    expect(mayDriveHeld({ by: "user:u1", exclusive: true }, "user:u1")).toBe(true);
    expect(mayDriveHeld({ by: "user:u1", exclusive: true }, "user:u2")).toBe(false);
    expect(mayDriveHeld({ by: "user:u1", exclusive: true }, "key:k1")).toBe(false);
    expect(mayDriveHeld({ by: "key:k1", exclusive: true }, "user:u2")).toBe(true);
    expect(mayDriveHeld({ by: "key:k1", exclusive: true }, "key:k1")).toBe(false);
  });
});
