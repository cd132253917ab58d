import { describe, expect, it } from "vitest";
import { jsonText, printable } from "../../cli/output";

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
