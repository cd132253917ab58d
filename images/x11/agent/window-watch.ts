// Knowing that the window list did not change without asking again (issue 15; ADR 0015). Every
// batch answers with the screen's windows, and listing them took three round trips' worth of time
// after a click, each waiting behind the X server drawing the page: three times the click itself.
// The X server instead tells this connection of whatever a listing reads: the root window's
// _NET_CLIENT_LIST and _NET_ACTIVE_WINDOW, each listed client's title, class, pid and state
// (PropertyNotify), and a window that moves, changes size, maps, unmaps or goes (ConfigureNotify
// and the rest, from the root's substructure and each client's structure).
//
// Ordering makes it exact, as with DAMAGE (damage.ts): `begin()` clears `stale` before a listing's
// requests go out, and a client is listened to before anything is asked about it, so whatever
// changes after a read is reported by an event that sets `stale` again. A notify for a change from
// before the read may still arrive after `begin()`; it only costs one more listing. Events other
// clients cause come when they come, with or without this: a listing was never more than a look
// at one moment.
import type { XConnection } from "./x11-wire";
import {
  ATOM_WM_CLASS, ATOM_WM_NAME, EVENT_MASK_PROPERTY_CHANGE, EVENT_MASK_STRUCTURE_NOTIFY, EV_CONFIGURE_NOTIFY,
  EV_DESTROY_NOTIFY, EV_PROPERTY_NOTIFY, ROOT_EVENT_MASK, selectEvents,
} from "./x11-requests";

/** What a listing reads, by property name. Any other property (_NET_WM_USER_TIME, set on every click) changes nothing listed. */
const WATCHED = ["_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW", "_NET_SUPPORTING_WM_CHECK", "_NET_WM_NAME", "_NET_WM_PID", "_NET_WM_STATE", "_NET_WM_WINDOW_TYPE"];

/** CreateNotify, UnmapNotify, MapNotify, ReparentNotify, GravityNotify, CirculateNotify. */
const STRUCTURE_EVENTS = new Set([16, 18, 19, 21, 24, 26]);

export class WindowWatch<T> {
  private stale = true;
  private generation = 0;
  private last: { generation: number; value: T } | null = null;
  /** Client windows this connection listens to. */
  private readonly followed = new Set<number>();
  /** The last real ConfigureNotify's place and size per window: a restack alone changes nothing listed. */
  private readonly placed = new Map<number, string>();

  private constructor(
    private readonly conn: XConnection,
    private readonly atoms: Set<number>,
  ) {}

  static async open<T>(conn: XConnection, root: number, atom: (name: string) => Promise<number>): Promise<WindowWatch<T>> {
    const atoms = new Set([ATOM_WM_NAME, ATOM_WM_CLASS, ...(await Promise.all(WATCHED.map(atom)))]);
    selectEvents(conn, root, ROOT_EVENT_MASK);
    return new WindowWatch<T>(conn, atoms);
  }

  /** For the connection's event handler; never consumes the event. */
  onEvent(ev: Buffer): void {
    const code = ev[0] & 0x7f;
    if (code === EV_PROPERTY_NOTIFY) {
      if (this.atoms.has(ev.readUInt32LE(8))) this.stale = true;
    } else if (code === EV_CONFIGURE_NOTIFY) {
      // A window manager's synthetic ConfigureNotify (ICCCM 4.1.5) gives root coordinates: the
      // real one that goes with it is what counts.
      if (ev[0] & 0x80) return;
      const window = ev.readUInt32LE(8);
      const place = ev.toString("hex", 16, 26); // x, y, width, height, border
      if (this.placed.get(window) !== place) {
        this.placed.set(window, place);
        this.stale = true;
      }
    } else if (code === EV_DESTROY_NOTIFY) {
      const window = ev.readUInt32LE(8);
      this.placed.delete(window);
      this.followed.delete(window);
      this.stale = true;
    } else if (STRUCTURE_EVENTS.has(code)) {
      this.stale = true;
    }
  }

  /** The last listing, when nothing it read has changed since; null otherwise. */
  fresh(): T | null {
    return !this.stale && this.last?.generation === this.generation ? this.last.value : null;
  }

  /** Call right before a listing's first request goes out; hand the number to `keep`. */
  begin(): number {
    this.stale = false;
    return ++this.generation;
  }

  /** Listens to these client windows from now on; call before asking anything about them. */
  follow(ids: Iterable<number>): void {
    for (const id of ids) {
      if (this.followed.has(id)) continue;
      this.followed.add(id);
      selectEvents(this.conn, id, EVENT_MASK_PROPERTY_CHANGE | EVENT_MASK_STRUCTURE_NOTIFY, true);
    }
  }

  /**
   * A listed window that was gone when asked about: it was not listened to either, and its id
   * may come back as another client's window (the X server reuses a client's id range), which
   * must then be listened to afresh.
   */
  forget(id: number): void {
    this.followed.delete(id);
  }

  /**
   * Keeps a listing begun as `generation`, unless another began since. `exact`: false when the
   * listing read something no event reports (the input focus, with no EWMH window manager).
   */
  keep(generation: number, value: T, exact: boolean): void {
    if (generation !== this.generation) return;
    if (exact) this.last = { generation, value };
    else this.stale = true;
  }
}
