import { describe, expect, it } from "vitest";
import { type AriaNode, type RefState, changesBetween, flatten } from "~/models/page-element-snap.server";
import { failure, isRef, isSelector } from "~/models/page-element-target.server";
import { ElementOpSchema } from "~/protocol/page-actions";

// The pure parts of pages by element: how a snapshot tree becomes the API's elements, what an
// operation reports as changed, and how a Playwright failure becomes the seed's error without
// ever carrying a typed secret. tests/integration/page-element*.test.ts drive real pages.

const state = (secrets: string[] = []): RefState => ({ gen: 0, mainNavs: 0, known: new Set(), secrets: new Set(secrets), history: [], partial: 0 });

/** A Playwright error as its client throws it: a first line, then the call log. */
function pwError(name: string, lines: string[]): Error {
  const e = new Error(lines.join("\n"));
  e.name = name;
  return e;
}

describe("snapshot elements", () => {
  const tree: AriaNode[] = [
    {
      role: "generic",
      ref: "e1",
      children: [
        { role: "heading", name: "Sign in", level: 1, ref: "e2" },
        "Email",
        { role: "textbox", name: "Email", ref: "e3", text: "me@example.com" },
        { role: "textbox", name: "Password", ref: "e4", text: "hunter22" },
        { role: "checkbox", name: "Remember me", ref: "e5" },
        { role: "combobox", name: "Country", ref: "e6", children: [{ role: "option", name: "France" }, { role: "option", name: "Japan", selected: true }] },
        { role: "generic", ref: "e7", cursor: "pointer", text: "Clicky" },
        { role: "paragraph", ref: "e8", text: "prose is not a control" },
      ],
    },
  ];

  it("lists controls, headings and clickable things, with their state and value", () => {
    const out = flatten(state(), tree);
    expect(out.map((e) => e.ref)).toEqual(["e2", "e3", "e4", "e5", "e6", "e7"]);
    expect(out.find((e) => e.ref === "e5")).toEqual({ ref: "e5", role: "checkbox", name: "Remember me", checked: false });
    expect(out.find((e) => e.ref === "e6")?.value).toBe("Japan");
    expect(out.find((e) => e.ref === "e7")?.name).toBe("Clicky");
  });

  it("masks a value typed from a secret wherever it shows", () => {
    const out = flatten(state(["hunter22"]), tree);
    expect(JSON.stringify(out)).not.toContain("hunter22");
    expect(out.find((e) => e.ref === "e4")?.value).toBe("••••••");
  });

  it("changes: state that changed (with what it was), what appeared and what went", () => {
    const before = flatten(state(), tree);
    const after = flatten(state(), [
      { role: "textbox", name: "Email", ref: "e3", text: "other@example.com" },
      { role: "checkbox", name: "Remember me", ref: "e5", checked: true },
      { role: "button", name: "Continue", ref: "e9" },
    ]);
    const c = changesBetween(before, after);
    expect(c.changed.map((e) => [e.ref, e.was])).toEqual([
      ["e3", { value: "me@example.com" }],
      ["e5", { checked: false }],
    ]);
    expect(c.appeared.map((e) => e.ref)).toEqual(["e9"]);
    expect(c.removed).toEqual(["e2", "e4", "e6", "e7"]);
  });
});

describe("queries", () => {
  it("refs, selectors with an engine, and plain text", () => {
    expect(["e12", "f1e3"].every(isRef)).toBe(true);
    expect(["E12", "e", "12", "fe3", "e12 "].some(isRef)).toBe(false);
    expect(["css=#email", "xpath=//a", "text=Go", "role=button", "internal:label=Email", "//div"].every(isSelector)).toBe(true);
    expect(["Email", "#email", "Sign in", "e12"].some(isSelector)).toBe(false);
  });

  it('`fill` takes exactly one of `text` and `secret_ref` (004: "text or secret_ref")', () => {
    expect(ElementOpSchema.safeParse({ op: "fill", query: "Email", text: "me@example.com" }).success).toBe(true);
    expect(ElementOpSchema.safeParse({ op: "fill", query: "Password", secret_ref: "login_pw" }).success).toBe(true);
    expect(ElementOpSchema.safeParse({ op: "fill", query: "Password" }).success).toBe(false);
    expect(ElementOpSchema.safeParse({ op: "fill", query: "Password", text: "x", secret_ref: "y" }).success).toBe(false);
    expect(ElementOpSchema.safeParse({ op: "fill", query: "Password", secret_ref: "x".repeat(201) }).success).toBe(false);
  });
});

describe("Playwright failures", () => {
  const log = (...checks: string[]) => ["  - waiting for getByRole('button')", "    - locator resolved to <button>Go</button>", ...checks.map((c) => `      - ${c}`)];

  it("a check that kept failing is 422 failed naming it", () => {
    const covered = failure(pwError("TimeoutError", ["locator.click: Timeout 3000ms exceeded.", "Call log:", ...log('<div id="cover"></div> intercepts pointer events')]), 'click on "Go"');
    expect(covered.toJSON()).toMatchObject({ code: "failed", retryable: false });
    expect(covered.message).toContain('"receives events"');
    expect(covered.message).toContain('<div id="cover"></div> intercepts pointer events');
    for (const check of ["visible", "enabled", "editable", "stable"]) {
      expect(failure(pwError("TimeoutError", ["x", ...log(`\u001b[2melement is not ${check}\u001b[22m`)]), "click").message).toContain(`"${check}"`);
    }
  });

  it("an element that never resolved is 404; a closed tab 409, retryable", () => {
    expect(failure(pwError("TimeoutError", ["x", "  - waiting for locator('#gone')"]), "click").code).toBe("not_found");
    const closed = failure(new Error("locator.click: Target page, context or browser has been closed"), "click");
    expect([closed.code, closed.retryable]).toEqual(["screen_unavailable", true]);
  });

  it("a message never carries a value `fill` typed, nor a secret typed into the tab", () => {
    const err = pwError("TimeoutError", ["locator.fill: Timeout", "  - waiting for getByLabel('PIN')", '    - fill("s3cret-value")', "      - element is not editable"]);
    expect(failure(err, "fill").message).not.toContain("s3cret-value");
    const other = failure(new Error("locator.fill: something about s3cret-value"), "fill", state(["s3cret-value"]));
    expect(other.message).not.toContain("s3cret-value");
  });
});
