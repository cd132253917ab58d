// Proof that the clients our keys went to have taken them, so a remapped keycode can be given a
// new keysym without changing what an earlier press of it means (docs/decisions/0008).
//
// A client translates a keycode to a character with the keymap it holds when it handles the
// KeyPress; after a MappingNotify it fetches the server's *current* map (Xlib even marks its map
// stale when it reads the notify, before it handles the keys queued ahead of it). So a keycode
// may get another keysym only once every client that received a press or release of it has
// handled that event. Two steps:
// 1. _NET_WM_PING (EWMH; Chromium, GTK, Qt, Firefox), when the client speaks it: the ping is a
//    ClientMessage the server queues behind the key events it already delivered to that client,
//    and the pong comes back once the client's event loop has reached it.
// 2. Then, and for every client: the X server and every thread of the client's process (the
//    one X-Resource names) are seen asleep, none switched in between two looks. The server sleeps only with no request left to handle and every reply and event
//    written out, so the client is not waiting on a reply; an event loop asleep with nothing to
//    read has handled its queue. Step 2 is what covers Chromium reloading its keymap after the
//    pong (it holds key events back until a worker thread has compiled the new keymap: measured,
//    300 characters typed with the final keymap of a run when only its main thread was watched).
import type { XConnection } from "./x11-wire";
import {
  ATOM_ATOM, ROOT_EVENT_MASK, EV_CLIENT_MESSAGE, getProperty, propU32s, queryPointer, queryTree,
  selectEvents, sendClientMessageTo, xresClientPid,
} from "./x11-requests";
import { threadsSnapshot } from "./proc-idle";
import { AgentError } from "./errors";
import type { KeyHooks } from "./keyboard";
import { sleep } from "./util";

/** Between the two looks at the server and the client. */
const IDLE_LOOK_MS = 1;

const NONE = 0;
const POINTER_ROOT = 1;

export interface DeliveryDeps {
  conn: XConnection;
  root: number;
  atom(name: string): Promise<number>;
  /** X-Resource major opcode, or null when the server lacks it. */
  xres: number | null;
  /** A round trip: every request sent so far has been handled by the server. */
  sync(): Promise<unknown>;
  /** How long a client may take to show it has handled its keys before the step fails. */
  timeoutMs: number;
  /** The X server's PID (from its lock file), or null when unknown. */
  serverPid: number | null;
}

interface Client {
  /** The window to ping, when its client speaks _NET_WM_PING. */
  ping: number | null;
  pid: number | null;
  label: string;
}

export class KeyDelivery {
  /** Focus windows that received keys not yet confirmed. */
  private readonly pending = new Set<number>();
  private readonly pongs = new Map<number, () => void>();
  private selected = false;
  private stamp = 0;
  /** WM_PROTOCOLS and _NET_WM_PING, once a ping has looked them up. */
  private atoms: { protocols: number; ping: number } | null = null;

  constructor(private readonly deps: DeliveryDeps) {}

  /** Keys are about to go, or just went, to whoever has `focus` (from GetInputFocus). */
  note(focus: number): void {
    if (focus !== NONE) this.pending.add(focus);
  }

  /**
   * The keyboard's hooks for an input backend whose `sync` answers the focus window: after a
   * remap, the focused client is noted and confirmed too, so it has taken the new keymap in.
   */
  hooks(sync: () => Promise<number>): KeyHooks {
    return {
      confirm: () => this.confirm(),
      remapped: async () => {
        this.note(await sync());
        await this.confirm();
      },
    };
  }

  get outstanding(): number {
    return this.pending.size;
  }

  /** For the connection's event handler: pongs come back as ClientMessages to the root window. */
  onEvent(ev: Buffer): void {
    if ((ev[0] & 0x7f) !== EV_CLIENT_MESSAGE || ev[1] !== 32 || !this.atoms) return;
    if (ev.readUInt32LE(8) !== this.atoms.protocols || ev.readUInt32LE(12) !== this.atoms.ping) return;
    const stamp = ev.readUInt32LE(16);
    const done = this.pongs.get(stamp);
    if (done) done();
  }

  /** Resolves once every client that received keys since the last confirmation has handled them. */
  async confirm(): Promise<void> {
    if (this.pending.size === 0) return;
    const windows = [...this.pending];
    this.pending.clear();
    try {
      const deadline = Date.now() + this.deps.timeoutMs;
      const clients = new Map<string, Client>();
      for (const w of windows) {
        const c = await this.clientOf(w);
        if (c) clients.set(c.ping !== null ? `w${c.ping}` : `p${c.pid}`, c);
      }
      await Promise.all(
        [...clients.values()].map(async (c) => {
          if (c.ping !== null) await this.ping(c, deadline);
          if (c.pid !== null) await this.idle(c, deadline);
        }),
      );
    } catch (err) {
      for (const w of windows) this.pending.add(w);
      throw err;
    }
  }

  /** Who handles keys sent while `focus` has the focus; null when nobody does (or the window is gone). */
  private async clientOf(focus: number): Promise<Client | null> {
    const { conn, root } = this.deps;
    let w = focus;
    try {
      if (w === POINTER_ROOT) {
        // Keys go to the window under the pointer.
        w = root;
        for (let i = 0; i < 32; i++) {
          const p = await queryPointer(conn, w);
          if (!p.child) break;
          w = p.child;
        }
      }
      if (w === root) return null;
      const [protocolsAtom, pingAtom] = await Promise.all([this.deps.atom("WM_PROTOCOLS"), this.deps.atom("_NET_WM_PING")]);
      let ping: number | null = null;
      for (let cur = w, i = 0; cur && cur !== root && i < 32; i++) {
        const prop = await getProperty(conn, cur, protocolsAtom, ATOM_ATOM, 64);
        if (prop) {
          if (propU32s(prop).includes(pingAtom)) ping = cur;
          break;
        }
        cur = (await queryTree(conn, cur)).parent;
      }
      const pid = this.deps.xres !== null ? await xresClientPid(conn, this.deps.xres, w) : null;
      if (ping === null && pid === null) {
        throw new AgentError("failed", `cannot tell whether window 0x${w.toString(16)} has taken the keys (no _NET_WM_PING, no local process)`);
      }
      return { ping, pid, label: `window 0x${w.toString(16)}${pid ? ` (pid ${pid})` : ""}` };
    } catch (err) {
      if (err instanceof AgentError) throw err;
      // BadWindow: the window went away, and the keys it had with it.
      return null;
    }
  }

  private async ping(c: Client, deadline: number): Promise<void> {
    const { conn, root } = this.deps;
    const win = c.ping!;
    if (!this.selected) {
      // The pong is sent to the root window for SubstructureNotify|SubstructureRedirect listeners.
      selectEvents(conn, root, ROOT_EVENT_MASK);
      this.selected = true;
    }
    const [protocolsAtom, pingAtom] = await Promise.all([this.deps.atom("WM_PROTOCOLS"), this.deps.atom("_NET_WM_PING")]);
    this.atoms = { protocols: protocolsAtom, ping: pingAtom };
    this.stamp = (this.stamp % 0x7fffffff) + 1;
    const stamp = this.stamp;
    const answered = new Promise<void>((resolve) => this.pongs.set(stamp, resolve));
    try {
      sendClientMessageTo(conn, win, protocolsAtom, [pingAtom, stamp, win]);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()))));
      const gone = this.watchGone(win);
      const outcome = await Promise.race([answered.then(() => "ok" as const), late, gone.promise]);
      clearTimeout(timer);
      gone.stop();
      if (outcome === "late") {
        throw new AgentError("timeout", `${c.label} did not show within ${this.deps.timeoutMs} ms that it took the keys typed so far`);
      }
    } finally {
      this.pongs.delete(stamp);
    }
  }

  /** Resolves "gone" when the window no longer exists (checked now and then while waiting). */
  private watchGone(win: number): { promise: Promise<"gone">; stop(): void } {
    let stopped = false;
    const promise = (async (): Promise<"gone"> => {
      for (;;) {
        await sleep(250);
        if (stopped) return new Promise<"gone">(() => undefined);
        try {
          await queryTree(this.deps.conn, win);
        } catch {
          return "gone";
        }
      }
    })();
    return { promise, stop: () => (stopped = true) };
  }

  private async idle(c: Client, deadline: number): Promise<void> {
    const pid = c.pid!;
    const server = this.deps.serverPid;
    if (server === null) throw new AgentError("failed", `cannot tell whether ${c.label} has taken the keys: the X server's PID is unknown`);
    for (;;) {
      await this.deps.sync();
      const c1 = threadsSnapshot(pid);
      const s1 = threadsSnapshot(server);
      if (!c1.alive) return;
      if (c1.asleep && s1.asleep) {
        await sleep(IDLE_LOOK_MS);
        const c2 = threadsSnapshot(pid);
        const s2 = threadsSnapshot(server);
        if (!c2.alive) return;
        if (c2.asleep && s2.asleep && c2.switches === c1.switches && s2.switches === s1.switches) return;
      }
      if (Date.now() > deadline) {
        throw new AgentError("timeout", `${c.label} did not go idle within ${this.deps.timeoutMs} ms after the keys typed so far`);
      }
      await sleep(IDLE_LOOK_MS);
    }
  }
}
