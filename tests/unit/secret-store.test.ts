import { describe, expect, it } from "vitest";
import { storeModules } from "../support/store-modules";

// The secret store on a real SQLite store: what element fill and the `type` step read
// (secretValue), and the seal that keeps values encrypted at rest.

type Store = typeof import("~/models/secret-store.server");
type Seal = typeof import("~/utils/seal.server");

const stores = storeModules("secrets");

async function load() {
  const { dbm } = await stores.openStore("memory");
  const store: Store = await import("~/models/secret-store.server");
  const seal: Seal = await import("~/utils/seal.server");
  return { dbm, store, seal };
}

/** The ApiError an async call rejects with (code, status, message). */
async function refused(p: Promise<unknown>) {
  const e = (await p.then(() => undefined, (err: unknown) => err)) as { code?: string; status?: number; message?: string } | undefined;
  expect(e, "expected a refusal").toBeDefined();
  return { code: e!.code, status: e!.status, message: e!.message };
}

describe("secret store", () => {
  it('secretValue answers the owner\'s value; "a name that is not attached returns 400" (004) for any other owner', async () => {
    const { store } = await load();
    await store.putSecret("ws_a", "LOGIN_PASSWORD", "s3cret");
    expect(await store.secretValue("ws_a", "LOGIN_PASSWORD")).toBe("s3cret");
    for (const [owner, name] of [["ws_b", "LOGIN_PASSWORD"], [null, "LOGIN_PASSWORD"], ["ws_a", "OTHER"], ["ws_a", "not a name"]] as const) {
      expect(await refused(store.secretValue(owner, name))).toEqual({ code: "bad_request", status: 400, message: `no secret named "${name}"` });
    }
    // The server token's own secrets are apart from every workspace's.
    await store.putSecret(null, "LOGIN_PASSWORD", "server-side");
    expect(await store.secretValue(null, "LOGIN_PASSWORD")).toBe("server-side");
    expect(await store.secretValue("ws_a", "LOGIN_PASSWORD")).toBe("s3cret");
  });

  it("replacing keeps the creation date; listing has names and dates only; deleting twice is 404", async () => {
    const { store } = await load();
    const first = await store.putSecret("ws_a", "K", "one");
    await new Promise((r) => setTimeout(r, 5));
    const second = await store.putSecret("ws_a", "K", "two");
    expect(second.created_at_ms).toBe(first.created_at_ms);
    expect(second.updated_at_ms).toBeGreaterThan(first.updated_at_ms);
    expect(await store.secretValue("ws_a", "K")).toBe("two");
    expect(await store.listSecrets("ws_a")).toEqual([{ name: "K", created_at_ms: first.created_at_ms, updated_at_ms: second.updated_at_ms }]);
    expect(await store.listSecrets("ws_b")).toEqual([]);
    expect(await refused(store.deleteSecret("ws_b", "K"))).toMatchObject({ code: "not_found", status: 404 });
    expect(await store.deleteSecret("ws_a", "K")).toEqual({ name: "K", deleted: true });
    expect(await refused(store.deleteSecret("ws_a", "K"))).toMatchObject({ code: "not_found", status: 404 });
  });

  it("refuses an empty or oversized value and a bad name, naming the field, never the value", async () => {
    const { store } = await load();
    expect(await refused(store.putSecret("ws_a", "K", ""))).toMatchObject({ code: "bad_request", message: expect.stringMatching(/^value: /) });
    const big = await refused(store.putSecret("ws_a", "K", "x".repeat(store.SECRET_MAX_CHARS + 1)));
    expect(big).toMatchObject({ code: "bad_request", message: expect.stringMatching(/^value: .*at most/) });
    expect(big.message).not.toContain("xxx");
    expect(await refused(store.putSecret("ws_a", "../etc", "v"))).toMatchObject({ code: "bad_request", message: expect.stringMatching(/^secret: a name is/) });
  });

  it("values are sealed: the row holds no plain value, and a row copied to another owner or name does not open", async () => {
    const { dbm, store, seal } = await load();
    await store.putSecret("ws_a", "K", "plain-value-123");
    const row = await dbm.db().selectFrom("secrets").selectAll().where("name", "=", "K").executeTakeFirstOrThrow();
    expect(row.sealed).toMatch(/^v1\./);
    expect(row.sealed).not.toContain("plain-value-123");
    expect(Buffer.from(row.sealed.slice(3), "base64url").includes(Buffer.from("plain-value-123"))).toBe(false);
    // Sealing twice gives different bytes (a fresh IV each time).
    expect(seal.seal("secrets", "x", "c")).not.toBe(seal.seal("secrets", "x", "c"));
    expect(() => seal.unseal("secrets", row.sealed, "secrets\u0000ws_b\u0000K")).toThrow(/does not open/);
    expect(() => seal.unseal("browser_states", row.sealed, "secrets\u0000ws_a\u0000K")).toThrow(/does not open/);
    await dbm.db().insertInto("secrets").values({ ...row, owner: "ws_b" }).execute();
    const moved = await refused(store.secretValue("ws_b", "K"));
    expect(moved).toMatchObject({ code: "unavailable", status: 503 });
    expect(moved.message).not.toContain("plain-value");
  });

  it("a workspace keeps at most SECRETS_PER_OWNER names; replacing one is still allowed", async () => {
    const { store } = await load();
    for (let i = 0; i < store.SECRETS_PER_OWNER; i++) await store.putSecret("ws_a", `S${i}`, "v");
    expect(await refused(store.putSecret("ws_a", "ONE_MORE", "v"))).toMatchObject({ code: "denied", status: 409 });
    await store.putSecret("ws_a", "S0", "w");
    await store.putSecret("ws_b", "ONE_MORE", "v");
  });
});
