import { describe, expect, it } from "vitest";
import { jsonText, printable, ticker } from "../../cli/output";

// The CLI's human output never hands a box's control characters to the user's terminal.

describe("printable", () => {
  it("shows C0, DEL and C1 controls as escapes and leaves the rest as it is", () => {
    expect(printable("\x1b]0;pwned\x07\x1b[2J")).toBe("\\x1b]0;pwned\\x07\\x1b[2J");
    expect(printable("a\nb\tc\rd")).toBe("a\\nb\\tc\\rd");
    expect(printable("\x00\x7f\x9b31m\x85")).toBe("\\x00\\x7f\\x9b31m\\x85");
    expect(printable("Grüße ✓ 1280×800 C:\\x")).toBe("Grüße ✓ 1280×800 C:\\x");
  });
});

describe("jsonText", () => {
  it("escapes DEL and C1 as JSON does C0, and parses to the same value", () => {
    const v = { title: "\x1b]52;c;cHduZWQ=\x07\x9b2J\x7f", n: 1 };
    const text = jsonText(v, 2);
    expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    expect(JSON.parse(text)).toEqual(v);
  });
});

describe("ticker", () => {
  it("draws a label carrying a box's controls as text on a terminal", () => {
    const written: string[] = [];
    const write = process.stderr.write;
    const tty = process.stderr.isTTY;
    process.stderr.isTTY = true;
    process.stderr.write = ((s: string) => (written.push(String(s)), true)) as typeof process.stderr.write;
    try {
      const t = ticker("forking \x1b]0;pwned\x07");
      expect(written).toEqual([]); // nothing until start (a Ctrl-C handler goes in first)
      t.start();
      t.update("replaying \x9b2J");
      t.stop();
    } finally {
      process.stderr.write = write;
      process.stderr.isTTY = tty;
    }
    const out = written.join("");
    expect(out).toContain("forking \\x1b]0;pwned\\x07");
    expect(out).toContain("replaying \\x9b2J");
    expect(out.replace(/\r|\n/g, "")).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
  });
});
