import { describe, expect, it } from "vitest";
import { validateBatch } from "~/models/batch.server";
import { KeyError, keysymFor, parseChord, textProblem } from "~/protocol/keys";

// The key names and typed text the server checks before a batch runs (app/protocol/keys.ts), the
// same table and parser the in-box agent presses keys with.

const refusal = (actions: unknown[]): string => {
  try {
    validateBatch({ actions });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("the batch was accepted");
};

describe("key names and chords", () => {
  it("reads names, aliases, single characters, hex and U+ names, ctrl++ and a lone +", () => {
    expect(parseChord("ctrl+shift+t")).toMatchObject({ modifiers: [0xffe3, 0xffe1], key: 0x74 });
    expect(parseChord("ctrl++")).toMatchObject({ modifiers: [0xffe3], key: 0x2b });
    expect(parseChord("+")).toMatchObject({ modifiers: [], key: 0x2b });
    expect(parseChord("ctrl")).toMatchObject({ modifiers: [0xffe3], key: null });
    expect(parseChord("U+20AC")).toMatchObject({ modifiers: [], key: 0x10020ac });
    expect(parseChord("ctrl+U+0041")).toMatchObject({ modifiers: [0xffe3], key: 0x41 });
    expect(keysymFor("PageDown")).toBe(0xff56);
    expect(keysymFor("0xff0d")).toBe(0xff0d);
  });

  it("refuses an unknown name, a dangling +, a non-modifier before + and an empty chord", () => {
    expect(() => parseChord("nosuchkey")).toThrow(new KeyError('unknown key name "nosuchkey"'));
    expect(() => parseChord("ctrl+")).toThrow(/ends with \+/);
    expect(() => parseChord("a+b")).toThrow(/"a" in chord "a\+b" is not a modifier/);
    expect(() => parseChord("  ")).toThrow(/empty chord/);
  });

  it("finds the first control character no key types; newline, tab, CR, backspace and escape have keys", () => {
    expect(textProblem("a\r\n\tb\b\u001b")).toBeNull();
    expect(textProblem("é😀")).toBeNull();
    expect(textProblem("x\u0000y\u0007")).toBe("text holds control character U+0000, which has no key");
  });
});

describe("a batch's steps are refused by the server, naming the step and field", () => {
  it.each([
    [{ type: "press", chord: "nosuchkey" }, 'actions[1] (press): chord: unknown key name "nosuchkey"'],
    [{ type: "press", chord: ["a", "ctrl+"] }, "actions[1] (press): chord.1: "],
    [{ type: "press", chord: "a", then: "nope_key" }, 'actions[1] (press): then: unknown key name "nope_key"'],
    [{ type: "key_down", key: "ctrl+a" }, 'actions[1] (key_down): key: unknown key name "ctrl+a"'],
    [{ type: "key_up", key: "nosuchkey" }, 'actions[1] (key_up): key: unknown key name "nosuchkey"'],
    [{ type: "type", text: "x\u0000" }, "actions[1] (type): text: text holds control character U+0000, which has no key"],
  ])("%j", (bad, message) => {
    expect(refusal([{ type: "type", text: "A" }, bad])).toContain(message);
  });

  it("accepts well-formed keys and text", () => {
    expect(() =>
      validateBatch({
        actions: [
          { type: "press", chord: ["shift+A", "+", "Return"], then: ["BackSpace"], held: ["ctrl"] },
          { type: "key_down", key: "Shift" },
          { type: "key_up", key: "shift" },
          { type: "type", text: "ab\tc\r\n" },
        ],
      }),
    ).not.toThrow();
  });
});
