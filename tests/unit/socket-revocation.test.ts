import { describe, expect, it } from "vitest";
import { storeModules } from "../support/store-modules";

// What a box page's socket is told when the store does not answer: a failed check is no answer,
// so nobody is told "you were removed" or "your access ended" for an outage. The handshake's
// refusal marks access refusals (`data.access`), which the page shows for good, apart from the
// rest ("internal"), which it retries (app/components/use-live-box.ts). Real modules on a real
// store, closed to make the outage; the socket stands in for socket.io's with what they use.

const stores = storeModules("socket-revocation");

type Emitted = { event: string; body: unknown };

function boxesSocket(cookie?: string) {
  const emitted: Emitted[] = [];
  const socket = {
    nsp: { name: "/boxes" },
    connected: true,
    handshake: { headers: { cookie }, auth: {} },
    data: {
      actor: { kind: "workspace", workspaceId: "ws_crew", role: "member", via: "session", userId: "usr_bo", sessionId: "ses_bo" },
    } as Record<string, unknown>,
    emit(event: string, body: unknown) {
      emitted.push({ event, body });
      return true;
    },
    disconnect() {
      socket.connected = false;
    },
  };
  return { socket, emitted };
}

async function refusal(cookie: string | undefined): Promise<Error & { data?: { access?: boolean } }> {
  const { requireSession } = await import("../../server/socket-auth");
  const { socket } = boxesSocket(cookie);
  return new Promise((resolve) => void requireSession("viewer")(socket as never, (err) => resolve(err as never)));
}

describe("a box page's socket when the store does not answer", () => {
  it("a recheck that cannot reach the store tells the page nothing (no 'removed'), and closes", async () => {
    const { dbm } = await stores.openStore("memory");
    const { recheckSocket } = await import("../../server/revocation");
    await dbm.closeDb();
    const { socket, emitted } = boxesSocket();
    await recheckSocket(socket as never, "viewer");
    expect(emitted).toEqual([]);
    expect(socket.connected).toBe(false);
  }, 30_000);

  it("a handshake refused for access says so (data.access); refused for an outage, it does not", async () => {
    const { dbm } = await stores.openStore("memory");
    const signedOut = await refusal(undefined);
    expect(signedOut.message).toBe("unauthorized");
    expect(signedOut.data).toEqual({ access: true });
    await dbm.closeDb();
    const down = await refusal(`holm_session=${"a".repeat(32)}`);
    expect(down.message).toBe("internal");
    expect(down.data?.access).toBeUndefined();
  }, 30_000);
});
