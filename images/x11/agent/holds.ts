// What is held down on one screen, and the timers that let go of it. Timers live here, in the
// box, so a key or button never stays down because the server went away.
import type { InputBackend, KeyToken } from "./input";
import { MAX_HOLD_MS } from "./schema";

/** "batch": let go when the batch ends. "timed": outlives the batch until its timer or an explicit up. */
export type HoldScope = "batch" | "timed";

interface Hold {
  label: string;
  releaseAt: number;
  scope: HoldScope;
  timer: NodeJS.Timeout;
}

interface KeyHold extends Hold {
  token: KeyToken;
}

export interface Released {
  released: string[];
  released_keys: string[];
}

export interface Holding {
  holding: Array<{ button: string; release_at_ms: number }>;
  holding_keys: Array<{ key: string; release_at_ms: number }>;
}

export const BUTTONS: Record<string, number> = { left: 1, middle: 2, right: 3 };
const BUTTON_NAMES: Record<number, string> = { 1: "left", 2: "middle", 3: "right" };

export class Holds {
  private readonly buttons = new Map<number, Hold>();
  private readonly keys = new Map<number, KeyHold>();
  /** What timers let go of while a batch ran; the batch reports it. */
  private log: Released | null = null;

  constructor(private readonly input: () => Promise<InputBackend>) {}

  private arm(holdMs: number, fire: () => void): { timer: NodeJS.Timeout; releaseAt: number } {
    const ms = Math.min(Math.max(holdMs, 0), MAX_HOLD_MS);
    const timer = setTimeout(fire, ms);
    timer.unref();
    return { timer, releaseAt: Date.now() + ms };
  }

  async pressButton(button: number, holdMs: number, scope: HoldScope): Promise<void> {
    const existing = this.buttons.get(button);
    if (existing) clearTimeout(existing.timer);
    else await (await this.input()).button(button, true);
    const { timer, releaseAt } = this.arm(holdMs, () => void this.releaseButton(button, true));
    const widened: HoldScope = existing?.scope === "timed" || scope === "timed" ? "timed" : "batch";
    this.buttons.set(button, { label: BUTTON_NAMES[button] ?? String(button), releaseAt, scope: widened, timer });
  }

  /** Lets go of a button; true when it was held. `auto`: not asked for by the caller, so reported. */
  async releaseButton(button: number, auto: boolean): Promise<boolean> {
    const h = this.buttons.get(button);
    this.buttons.delete(button);
    if (h) clearTimeout(h.timer);
    try {
      await (await this.input()).button(button, false);
    } catch {
      // The display is gone, and with it whatever was held.
    }
    if (h && auto && this.log) this.log.released.push(h.label);
    return Boolean(h);
  }

  isKeyHeld(keysym: number): boolean {
    return this.keys.has(keysym);
  }

  async pressKey(keysym: number, label: string, holdMs: number, scope: HoldScope): Promise<void> {
    const existing = this.keys.get(keysym);
    let token: KeyToken;
    if (existing) {
      clearTimeout(existing.timer);
      token = existing.token;
    } else {
      token = await (await this.input()).keyDown(keysym);
    }
    const { timer, releaseAt } = this.arm(holdMs, () => void this.releaseKey(keysym, true));
    const widened: HoldScope = existing?.scope === "timed" || scope === "timed" ? "timed" : "batch";
    this.keys.set(keysym, { label, releaseAt, scope: widened, timer, token });
  }

  async releaseKey(keysym: number, auto: boolean): Promise<boolean> {
    const h = this.keys.get(keysym);
    if (!h) return false;
    this.keys.delete(keysym);
    clearTimeout(h.timer);
    try {
      await (await this.input()).keyUp(h.token);
    } catch {
      // as above
    }
    if (auto && this.log) this.log.released_keys.push(h.label);
    return true;
  }

  /** Lets go of everything (or only batch-scoped holds); buttons first so a drag ends before its modifiers. */
  async releaseAll(onlyBatch: boolean): Promise<Released> {
    const out: Released = { released: [], released_keys: [] };
    for (const [button, h] of [...this.buttons]) {
      if (onlyBatch && h.scope !== "batch") continue;
      await this.releaseButton(button, false);
      out.released.push(h.label);
    }
    for (const [keysym, h] of [...this.keys].reverse()) {
      if (onlyBatch && h.scope !== "batch") continue;
      await this.releaseKey(keysym, false);
      out.released_keys.push(h.label);
    }
    // Nothing let go, nothing to wait for: every step already ended on a round trip of its own.
    if (out.released.length === 0 && out.released_keys.length === 0) return out;
    try {
      await (await this.input()).sync();
    } catch {
      // nothing more can be done for a display that is gone
    }
    return out;
  }

  /** Forgets holds without sending anything: the X server they were held on is gone. */
  forget(): void {
    for (const h of this.buttons.values()) clearTimeout(h.timer);
    for (const h of this.keys.values()) clearTimeout(h.timer);
    this.buttons.clear();
    this.keys.clear();
  }

  beginBatch(): void {
    this.log = { released: [], released_keys: [] };
  }

  endBatch(): Released {
    const log = this.log ?? { released: [], released_keys: [] };
    this.log = null;
    return log;
  }

  snapshot(): Holding {
    return {
      holding: [...this.buttons.values()].map((h) => ({ button: h.label, release_at_ms: h.releaseAt })),
      holding_keys: [...this.keys.values()].map((h) => ({ key: h.label, release_at_ms: h.releaseAt })),
    };
  }
}
