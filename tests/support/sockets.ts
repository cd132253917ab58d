import { type Socket, io } from "socket.io-client";
import { RfbClient } from "../../bench/rfb-client";
import type { TestServer } from "./server";

// The console's three kinds of socket, opened as a browser would (cookie or ticket), for tests
// that check who may open them and when the server closes them.

export interface Closing {
  /** Resolves when the server (or the network) ends the socket: when, and what it said. */
  closed: Promise<{ at: number; code: number | string; reason: string }>;
  /** Whether the socket still answers: a round trip through the server now. */
  alive(): Promise<boolean>;
  close(): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A viewer socket (RFB over WebSocket), handshaken; or the HTTP status of a refused upgrade. */
export async function openViewer(url: string): Promise<(Closing & { rfb: RfbClient }) | number> {
  let c: Awaited<ReturnType<typeof RfbClient.overWebSocket>>;
  try {
    c = await RfbClient.overWebSocket(url);
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
  let ended = false;
  const closed = c.closed.then((x) => {
    ended = true;
    return { at: Date.now(), ...x };
  });
  try {
    await c.handshake();
  } catch {
    // Closed right after the upgrade: report it as the close code.
    const x = await closed;
    return typeof x.code === "number" ? -x.code : -1;
  }
  return {
    rfb: c,
    closed,
    async alive() {
      if (ended) return false;
      c.requestUpdate(false, 0, 0, 8, 8);
      // A closed socket answers at once; an open one has 10 s to send the update (a CI run beside
      // the other suites once went past the 3 s this waited before).
      return Promise.race([c.nextUpdate().then(() => true, () => false), closed.then(() => false), sleep(10_000).then(() => false)]);
    },
    close: () => c.close(),
  };
}

/**
 * A socket.io connection to a namespace of the console with a session cookie (never reconnects
 * by itself), or the error text when the handshake was refused.
 */
export async function openIo(
  server: TestServer,
  ns: "/boxes" | "/terminal",
  cookie: string | undefined,
  auth: Record<string, unknown>,
): Promise<(Closing & { socket: Socket; events: { name: string; args: unknown[] }[] }) | string> {
  const socket = io(`${server.base}${ns}`, {
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
    auth,
    extraHeaders: cookie ? { cookie } : {},
    timeout: 10_000,
  });
  const events: { name: string; args: unknown[] }[] = [];
  socket.onAny((name: string, ...args: unknown[]) => events.push({ name, args }));
  const outcome = await new Promise<string | undefined>((resolve) => {
    socket.once("connect", () => resolve(undefined));
    socket.once("connect_error", (err) => resolve(err.message || "refused"));
  });
  if (outcome !== undefined) {
    socket.close();
    return outcome;
  }
  const closed = new Promise<{ at: number; code: string; reason: string }>((resolve) =>
    socket.once("disconnect", (reason) => {
      const exit = events.find((e) => e.name === "exit")?.args[0] as { why?: string } | undefined;
      resolve({ at: Date.now(), code: reason, reason: exit?.why ?? reason });
    }),
  );
  return {
    socket,
    events,
    closed,
    async alive() {
      if (!socket.connected) return false;
      // A ping the server must answer: socket.io's own heartbeat is too slow to wait for, so
      // check the transport is still open after a short pause.
      await sleep(100);
      return socket.connected;
    },
    close: () => socket.close(),
  };
}

/** Waits for a close, at most `ms`; resolves undefined when the socket is still open then. */
export function closedWithin<T>(c: { closed: Promise<T> }, ms: number): Promise<T | undefined> {
  return Promise.race([c.closed, sleep(ms).then(() => undefined)]);
}
