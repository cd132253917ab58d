import { describe, expect, it } from "vitest";
import { fold, folded, foldedSpans } from "~/models/secret-fold.server";
import { MASK, maskDeep, maskText, maskerOf, mayHold } from "~/models/secret-mask.server";

// The folded view secret masking compares (app/models/secret-fold.server.ts): a value and the
// forms pages make of it fold alike, and the span found is the original's.

describe("fold", () => {
  it("drops separators and case: a grouped card number, an upper-cased IBAN", () => {
    expect(folded("4111 1111 1111 1111")).toBe("4111111111111111");
    expect(folded("DE89 3704 0044 0532 0130 00")).toBe(folded("de89370400440532013000"));
    expect(folded("TOKABC123XYZQ")).toBe(folded("TokAbc123xyzQ"));
    expect(folded("(030) 123-45.67/8")).toBe("0301234567" + "8");
  });
  it("decodes percent-encoding (UTF-8 too), a form's +, \\u escapes (behind doubled backslashes), \\/ and HTML references", () => {
    expect(folded("Hunter2%21Zq9x")).toBe(folded("Hunter2!Zq9x"));
    expect(folded("me%40x+pass9Q")).toBe(folded("me@x pass9Q"));
    expect(folded("it%27s9Secret")).toBe(folded("it's9Secret"));
    expect(folded("p%C3%A4ssw%C3%B6rd77")).toBe("password77");
    expect(folded("p\\u00e4ssw\\u00f6rd77")).toBe("password77");
    expect(folded("p\\\\u00e4ssw\\\\u00f6rd77")).toBe("password77");
    expect(folded("\\ud83d\\ude00x")).toBe(folded("😀x"));
    expect(folded("ab\\/cd")).toBe(folded("ab/cd"));
    expect(folded("a&amp;b&#39;c&#x27;d&quot;")).toBe(folded(`a&b'c'd"`));
    expect(folded('pass\\_word\\*\\[1\\]')).toBe(folded("pass_word*[1]"));
  });
  it("folds Unicode forms alike: composed, decomposed, compatibility, ß as ss", () => {
    expect(folded("pässwörd77".normalize("NFD"))).toBe(folded("pässwörd77"));
    expect(folded("PÄSSWÖRD77")).toBe("password77");
    expect(folded("ｐａｓｓ１")).toBe("pass1");
    expect(folded("STRASSE")).toBe(folded("straße"));
  });
  it("keeps where each folded character came from", () => {
    const f = fold("x %41b");
    expect(f.text).toBe("xab");
    expect([...f.start]).toEqual([0, 2, 5]);
    expect([...f.end]).toEqual([1, 5, 6]);
    expect(foldedSpans("pay 4111 1111 1111 1111 now", ["4111111111111111"])).toEqual([[4, 23]]);
  });
  it("leaves text with no escapes in it alone, a lone % or & too", () => {
    expect(folded("100% & more")).toBe("100%&more");
  });
});

describe("masking with the folded view", () => {
  const m = maskerOf(["4111111111111111", "TokAbc123xyzQ", "pässwörd77", "abc", "12345"]);
  it("masks the span a changed value came from, and nothing around it", () => {
    expect(maskText(m, "card: 4111 1111 1111 1111.")).toBe(`card: ${MASK}.`);
    expect(maskText(m, "?t=TOKABC123XYZQ&x=1")).toBe(`?t=${MASK}&x=1`);
    expect(maskText(m, `{"acc":"p\\u00e4ssw\\u00f6rd77"}`)).toBe(`{"acc":"${MASK}"}`);
    expect(maskText(m, `user ${"pässwörd77".normalize("NFD")} end`)).toBe(`user ${MASK} end`);
  });
  it("short folded values are not looked for inside text", () => {
    expect(maskText(m, "ABC-DEF 1-2-3-4-5")).toBe("ABC-DEF 1-2-3-4-5");
  });
  it("a control's value that is part of a value is masked whole, other values left", async () => {
    const snap = { elements: [{ ref: "e1", role: "textbox", value: "TokAbc12" }, { ref: "e2", role: "textbox", value: "hello" }] };
    expect(mayHold(m, JSON.stringify(snap))).toBe(true);
    expect(maskDeep(m, snap)).toEqual({ elements: [{ ref: "e1", role: "textbox", value: MASK }, { ref: "e2", role: "textbox", value: "hello" }] });
    const changed = { changed: [{ ref: "e1", role: "textbox", value: "x", was: { value: "4111 11" } }] };
    expect(maskDeep(m, changed)).toEqual({ changed: [{ ref: "e1", role: "textbox", value: "x", was: { value: MASK } }] });
    // Not an element's value (an evaluate's): only a whole value is masked.
    expect(maskDeep(m, { value: "TokAbc12" })).toEqual({ value: "TokAbc12" });
    expect(mayHold(m, JSON.stringify({ title: "nothing here", value: "hi" }))).toBe(false);
  });
  it("finds a folded value in the JSON text before parsing it again", () => {
    expect(mayHold(m, JSON.stringify({ url: "http://x/?c=4111+1111+1111+1111" }))).toBe(true);
    expect(mayHold(m, JSON.stringify({ content: `x p\\u00e4ssw\\u00f6rd77` }))).toBe(true);
  });
  it("a cut text ending in a folded value's start, where the answer says it cut", () => {
    expect(maskDeep(m, { content: "name: TOKABC1", cut: true })).toEqual({ content: `name: ${MASK}`, cut: true });
    // A page's own "…" is a cut only for a value's start as it is, not folded (code review:
    // "Continue to your Account…" was dots for the secret account-9931).
    const n = maskerOf(["account-9931", "Welcome2024"]);
    expect(maskText(n, "Continue to your Account… WELCOME… Loading your acc ount…")).toBe("Continue to your Account… WELCOME… Loading your acc ount…");
    expect(maskText(n, "see accou…")).toBe(`see ${MASK}…`);
  });
  it("a control's value is masked whole only where it is a value's start, not any piece of it", () => {
    const n = maskerOf(["Summer2024!", "sk_test_51HabcXYZ0123456789"]);
    const snap = { elements: [{ ref: "e1", role: "combobox", value: "2024" }, { ref: "e2", role: "textbox", value: "test" }, { ref: "e3", role: "textbox", value: "summ" }] };
    expect(maskDeep(n, snap)).toEqual({ elements: [{ ref: "e1", role: "combobox", value: "2024" }, { ref: "e2", role: "textbox", value: "test" }, { ref: "e3", role: "textbox", value: MASK }] });
    expect(mayHold(n, JSON.stringify({ elements: [snap.elements[0], snap.elements[1]] }))).toBe(false);
  });
  it("an image's or a file's base64 is neither looked in nor masked", () => {
    const n = maskerOf(["abcdefgh"]);
    const shot = { png_base64: "xxABCDEFGHxx+/==", title: "t" };
    expect(mayHold(n, JSON.stringify(shot))).toBe(false);
    expect(maskDeep(n, { ...shot, title: "abcdefgh" })).toEqual({ png_base64: "xxABCDEFGHxx+/==", title: MASK });
  });
});
