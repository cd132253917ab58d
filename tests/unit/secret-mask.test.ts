import { describe, expect, it } from "vitest";
import { MASK, maskDeep, maskText, maskerOf, mayHold } from "~/models/secret-mask.server";

// The masking of secret values in answers about a box (app/models/secret-mask.server.ts), on
// strings: which forms of a value are found, and what is left alone.

const masker = (...values: string[]) => maskerOf(values);

describe("maskText", () => {
  const m = masker("hunter 22  x", "abc");
  it("finds a value as typed, with its whitespace made single, and URL-encoded", () => {
    expect(maskText(m, "typed hunter 22  x!")).toBe(`typed ${MASK}!`);
    expect(maskText(m, "typed hunter 22 x")).toBe(`typed ${MASK}`);
    expect(maskText(m, "/echo?p=hunter%2022%20%20x&q=1")).toBe(`/echo?p=${MASK}&q=1`);
    expect(maskText(m, "/echo?p=hunter+22++x")).toBe(`/echo?p=${MASK}`);
  });
  it("masks a short value only where it is the whole string", () => {
    expect(maskText(m, "abc")).toBe(MASK);
    expect(maskText(m, "abcdef")).toBe("abcdef");
  });
  it("takes out the start of a value that a cut string ends with", () => {
    expect(maskText(m, "name: hunter 2…")).toBe(`name: ${MASK}…`);
    expect(maskText(m, "name: hun…")).toBe("name: hun…");
  });
});

describe("maskDeep and mayHold", () => {
  const m = masker('pa"ss\\word');
  it("looks in the JSON text for the escaped form before parsing again", () => {
    const body = { title: 'x pa"ss\\word y', n: 1, list: [{ k: 'pa"ss\\word' }] };
    expect(mayHold(m, JSON.stringify(body))).toBe(true);
    expect(mayHold(m, JSON.stringify({ title: "nothing" }))).toBe(false);
    expect(maskDeep(m, body)).toEqual({ title: `x ${MASK} y`, n: 1, list: [{ k: MASK }] });
  });
});
