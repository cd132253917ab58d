// The fallback input path: one xdotool process per call, text and key names as argv elements.
// Used when the X server lacks XTEST or HOLM_AGENT_INPUT=xdotool. Never `xdotool click`: it
// sleeps 100 ms; mousedown + mouseup cost 2 ms each.
//
// xdotool types a character the layout lacks by remapping a scratch keycode and reverting it
// at once, so a client that reads the key late sees nothing (measured: é, 中, 😀 lost at
// --delay 0 and even at 25). So the keycodes are mapped first on our own connection (plain
// core ChangeKeyboardMapping, no XTEST needed) and kept; xdotool then finds every keysym on the
// keymap and only presses keys.
import type { InputBackend, KeyToken } from "./input";
import { syncConn } from "./input";
import { textUnits, type KeyHooks, type Keyboard } from "./keyboard";
import type { KeyDelivery } from "./key-delivery";
import type { XConnection } from "./x11-wire";
import { runToolOk } from "./proc";

const hex = (keysym: number): string => `0x${keysym.toString(16)}`;

export class XdotoolInput implements InputBackend {
  readonly kind = "xdotool";
  private readonly hooks: KeyHooks;

  constructor(
    private readonly display: string,
    private readonly conn: XConnection,
    readonly keyboard: Keyboard,
    private readonly delivery: KeyDelivery,
  ) {
    this.hooks = delivery.hooks(() => this.sync());
  }

  private async run(args: string[], timeoutMs = 10_000): Promise<void> {
    await runToolOk("xdotool", args, { display: this.display, timeoutMs });
  }

  async move(x: number, y: number): Promise<void> {
    await this.run(["mousemove", String(x), String(y)]);
  }

  async button(button: number, down: boolean): Promise<void> {
    await this.run([down ? "mousedown" : "mouseup", String(button)]);
  }

  async doubleClick(button: number, gapMs: number): Promise<void> {
    await this.run(["mousedown", String(button), "mouseup", String(button), "sleep", String(gapMs / 1000), "mousedown", String(button), "mouseup", String(button)]);
  }

  /** Records a key event on `sym`'s keycode, for the keycode's next remap to wait on. */
  private sent(sym: number, down: boolean): void {
    const k = this.keyboard.lookup(sym);
    if (k) this.keyboard.keyEvent(k.code, down);
  }

  async keyDown(keysym: number): Promise<KeyToken> {
    // The mapping is in place (a round trip later) before xdotool reads the keymap.
    await this.keyboard.prepare([keysym], this.hooks);
    this.delivery.note(await this.sync());
    await this.run(["keydown", hex(keysym)]);
    this.sent(keysym, true);
    return { keysym };
  }

  async keyUp(token: KeyToken): Promise<void> {
    this.delivery.note(await this.sync());
    await this.run(["keyup", hex(token.keysym)]);
    this.sent(token.keysym, false);
  }

  async typeText(text: string, delayMs: number): Promise<void> {
    const units = textUnits(text);
    await this.keyboard.forEachRun(units, this.hooks, async (run) => {
      this.delivery.note(await this.sync()); // also: the mapping is in place before xdotool reads the keymap
      const chunk = run.map((u) => u.ch).join("");
      await this.run(["type", "--delay", String(delayMs), "--", chunk], 30_000 + run.length * (delayMs + 20));
      for (const u of run) {
        this.sent(u.sym, true);
        this.sent(u.sym, false);
      }
      this.delivery.note(await this.sync());
    });
  }

  sync(): Promise<number> {
    return syncConn(this.conn);
  }
}
