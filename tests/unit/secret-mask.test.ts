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
    // A cut inside a message: the name in quotes was cut, the message goes on.
    expect(maskText(m, 'button "hunter 2…" intercepts pointer events')).toBe(`button "${MASK}…" intercepts pointer events`);
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

describe("an answer cut to its limit", () => {
  const m = masker("Bq7sEcr3tVaLue1");
  it("shows no start of a value its cut content or value ends with, nor a value's JSON text", () => {
    expect(maskDeep(m, { content: "x Bq7sEcr3tVaLue", cut: true })).toEqual({ content: `x ${MASK}`, cut: true });
    expect(maskDeep(m, { value: '["Bq7s', cut: true })).toEqual({ value: `["${MASK}`, cut: true });
    expect(mayHold(m, JSON.stringify({ value: '["Bq7s', cut: true }))).toBe(true);
    // Not cut: text that happens to end like a value's start is left.
    expect(maskDeep(m, { content: "x Bq7s", cut: false })).toEqual({ content: "x Bq7s", cut: false });
  });
});
