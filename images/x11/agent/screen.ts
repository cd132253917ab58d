// One screen: its warm X connection (reconnected when it drops), its input backend, what it
// holds down, and the lock a batch takes. On a Wayland box (config.desktop) the warm connections
// are wayvnc's and sway's instead (wayland.ts), and what needs X answers `unsupported`.
import fs from "node:fs";
import { XConnection } from "./x11-wire";
import {
  EV_BUTTON_RELEASE, EV_KEY_RELEASE, EV_MAPPING_NOTIFY, fakeInput, getInputFocus, internAtom,
  queryExtension, queryKeymap, queryPointer, xfixesQueryVersion, xresQueryVersion, xtestVersion,
} from "./x11-requests";
import { XtestInput, syncConn, type InputBackend } from "./input";
import { KeyDelivery } from "./key-delivery";
import { XdotoolInput } from "./input-xdotool";
import { Keyboard } from "./keyboard";
import { Holds } from "./holds";
import { Mutex } from "./util";
import { DamageWatch } from "./damage";
import { WindowWatch } from "./window-watch";
import type { WindowInfo } from "./window-types";
import { AgentError } from "./errors";
import type { AgentConfig } from "./config";
import { BandedPng } from "./png-bands";
import { IPC_GET_VERSION } from "./sway-ipc";
import { WaylandDesk, registerWaylandDisplay, type Desk, type Point } from "./wayland";

export interface Session extends Desk {
  conn: XConnection;
  input: InputBackend;
  root: number;
  width: number;
  height: number;
  /** XFIXES major opcode, for the cursor image; null when the server lacks it. */
  xfixes: number | null;
  /** Whether anything was drawn since the last capture; null when the server lacks DAMAGE. */
  damage: DamageWatch | null;
  /** Whether the window list changed since it was last read (window-watch.ts). */
  windows: WindowWatch<WindowInfo[]>;
  atom(name: string): Promise<number>;
}

export interface Recording {
  path: string;
  fps: number;
  startedAt: number;
  /** ffmpeg's exit code, and the video's own length as ffmpeg said at its end (ms), when it said. */
  stop(): Promise<{ code: number | null; videoMs?: number }>;
}

export class Screen {
  readonly display: string;
  readonly displayNumber: number;
  readonly holds: Holds;
  readonly lock = new Mutex();
  recording: Recording | null = null;
  /**
   * The input guard: true while a person holds this screen. Input steps are refused even in a
   * batch that started before the takeover; the server sets it, and it lapses by itself if the
   * server never comes back to clear it.
   */
  guardedUntil = 0;
  /** Who holds the screen while the guard is up (`user:…`): direct control sockets are theirs alone. */
  guardedBy = "";
  /** Last PNGs by frame hash, newest last: a repeated request is not encoded twice. */
  readonly pngCache = new Map<string, Buffer>();
  /** Encodes this screen's frames, deflating only the rows changed since the last one. */
  readonly framePng = new BandedPng();
  /** The last captured pixels and their hash, so an unchanged screen is not hashed again. */
  lastPixels: { key: string; px: Buffer; hash: string } | null = null;
  private current: Session | null = null;
  private connecting: Promise<Session> | null = null;
  private wl: WaylandDesk | null = null;
  private wlConnecting: Promise<WaylandDesk> | null = null;
  readonly isWayland: boolean;

  constructor(
    readonly index: number,
    readonly config: AgentConfig,
  ) {
    this.displayNumber = config.displayBase + index;
    this.isWayland = config.desktop === "wayland";
    // A Wayland screen's name is what children started on it are found by (proc.ts childEnv).
    this.display = this.isWayland ? `wayland:${index}` : `:${this.displayNumber}`;
    if (this.isWayland) registerWaylandDisplay(this.display, config.runtimeBase, index);
    this.holds = new Holds(async () => (await this.desk()).input);
  }

  get connected(): boolean {
    if (this.isWayland) return this.wl !== null && !this.wl.closed;
    return this.current !== null && !this.current.conn.closed;
  }

  /** What input steps drive: the X session, or the Wayland screen's. */
  desk(timeoutMs = 2000): Promise<Desk> {
    return this.isWayland ? this.wayland(timeoutMs) : this.session(timeoutMs);
  }

  /** The Wayland screen's live connections, made first if needed. */
  wayland(timeoutMs = 2000): Promise<WaylandDesk> {
    if (!this.isWayland) return Promise.reject(new AgentError("unsupported", "this is an X11 box"));
    if (this.wl && !this.wl.closed) return Promise.resolve(this.wl);
    if (!this.wlConnecting) {
      this.wlConnecting = WaylandDesk.open(this.config.runtimeBase, this.index, this.display, timeoutMs)
        .then((d) => {
          d.onClose(() => {
            if (this.wl === d) this.wl = null;
            this.holds.forget();
          });
          this.wl = d;
          return d;
        }, (err: unknown) => {
          throw new AgentError("failed", `Wayland screen ${this.index} does not answer: ${(err as Error).message}`);
        })
        .finally(() => {
          this.wlConnecting = null;
        });
    }
    return this.wlConnecting;
  }

  /** The live X session, connecting (and setting up) first if needed. */
  session(timeoutMs = 2000): Promise<Session> {
    if (this.isWayland) return Promise.reject(new AgentError("unsupported", "this needs X11, and this box runs Wayland (sway): docs/decisions/0030 lists what Wayland boxes do"));
    if (this.current && !this.current.conn.closed) return Promise.resolve(this.current);
    if (!this.connecting) {
      this.connecting = this.open(timeoutMs).finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }

  private async open(timeoutMs: number): Promise<Session> {
    let conn: XConnection;
    try {
      conn = await XConnection.connect(this.displayNumber, timeoutMs);
    } catch (err) {
      throw new AgentError("failed", `X display ${this.display} does not answer: ${(err as Error).message}`);
    }
    try {
      const { root, width, height } = conn.setup;
      const [xtest, xfixes, xres, damageExt] = await Promise.all([
        queryExtension(conn, "XTEST"),
        queryExtension(conn, "XFIXES"),
        queryExtension(conn, "X-Resource"),
        queryExtension(conn, "DAMAGE"),
      ]);
      const atoms = new Map<string, Promise<number>>();
      const atom = (name: string): Promise<number> => {
        let a = atoms.get(name);
        if (!a) {
          a = internAtom(conn, name);
          atoms.set(name, a);
          a.catch(() => atoms.delete(name));
        }
        return a;
      };
      if (xres.present) await xresQueryVersion(conn, xres.major);
      const keyboard = new Keyboard(conn);
      await keyboard.load();
      const delivery = new KeyDelivery({ conn, root, atom, xres: xres.present ? xres.major : null, sync: () => syncConn(conn), timeoutMs: this.config.keyConfirmMs,
        serverPid: xServerPid(this.displayNumber),
      });
      const damage = damageExt.present ? await DamageWatch.open(conn, damageExt, root) : null;
      const windows = await WindowWatch.open<WindowInfo[]>(conn, root, atom);
      conn.onEvent = (ev) => {
        windows.onEvent(ev);
        // MappingNotify, request Keyboard: someone changed the keymap (we do too, when remapping).
        if ((ev[0] & 0x7f) === EV_MAPPING_NOTIFY && ev[4] === 1) keyboard.stale = true;
        else if (!damage?.onEvent(ev)) delivery.onEvent(ev);
      };
      let input: InputBackend;
      if (xtest.present && this.config.input === "xtest") {
        await xtestVersion(conn, xtest.major);
        input = new XtestInput(conn, xtest.major, root, keyboard, delivery);
        await releaseStuck(conn, xtest.major);
      } else {
        input = new XdotoolInput(this.display, conn, keyboard, delivery);
      }
      if (xfixes.present) await xfixesQueryVersion(conn, xfixes.major);
      const session: Session = {
        conn,
        input,
        pointer: async (): Promise<Point> => {
          const p = await queryPointer(conn, root);
          return { x: p.x, y: p.y };
        },
        root,
        width,
        height,
        xfixes: xfixes.present ? xfixes.major : null,
        damage,
        windows,
        atom,
      };
      conn.onClose(() => {
        if (this.current === session) this.current = null;
        // A new X server starts with nothing held.
        this.holds.forget();
      });
      this.current = session;
      return session;
    } catch (err) {
      conn.close();
      throw new AgentError("failed", `X display ${this.display} setup failed: ${(err as Error).message}`);
    }
  }

  /** A viewer moved a Wayland screen's pointer (vnc-front.ts): that is where it is now. */
  viewerMovedPointer(x: number, y: number): void {
    this.wl?.pointerMovedTo(x, y);
  }

  /** The live X connection and a mark in its requests (`XConnection.mark()`), or null. */
  xMark(): { conn: XConnection; n: number } | null {
    return this.current && !this.current.conn.closed ? { conn: this.current.conn, n: this.current.conn.mark() } : null;
  }

  /** True when the display answers a round trip within `timeoutMs`; drops a connection that hangs. */
  async probe(timeoutMs: number): Promise<boolean> {
    if (this.isWayland) {
      try {
        const d = await this.wayland(timeoutMs);
        await withTimeout(d.ipc.request(IPC_GET_VERSION), timeoutMs);
        return true;
      } catch {
        this.wl?.close();
        return false;
      }
    }
    try {
      const s = await this.session(timeoutMs);
      await getInputFocus(s.conn, timeoutMs);
      return true;
    } catch {
      if (this.current) this.current.conn.close();
      return false;
    }
  }

  close(): void {
    this.current?.conn.close();
    this.wl?.close();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then((v) => (clearTimeout(t), resolve(v)), (e: unknown) => (clearTimeout(t), reject(e)));
  });
}

/** The X server's PID, from the lock file it writes (/tmp/.X<n>-lock), or null. */
function xServerPid(display: number): number | null {
  try {
    const pid = Number(fs.readFileSync(`/tmp/.X${display}-lock`, "latin1").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Lets go of every key and button the server reports down: an agent that restarts leaves nothing stuck. */
async function releaseStuck(conn: XConnection, xtest: number): Promise<void> {
  const [keys, pointer] = await Promise.all([queryKeymap(conn), queryPointer(conn, conn.setup.root)]);
  for (let byte = 0; byte < 32; byte++) {
    for (let bit = 0; bit < 8; bit++) {
      if (keys[byte] & (1 << bit)) fakeInput(conn, xtest, EV_KEY_RELEASE, byte * 8 + bit);
    }
  }
  for (let b = 1; b <= 5; b++) {
    if (pointer.mask & (1 << (7 + b))) fakeInput(conn, xtest, EV_BUTTON_RELEASE, b);
  }
  await getInputFocus(conn);
}
