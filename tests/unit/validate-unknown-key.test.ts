import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BatchBodySchema } from "~/protocol/api-box";
import { isApiError } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";

// A body with an unknown key is refused naming that key first (000: "a misspelled key gives an
// error"), with the missing key it likely stands for, not as that key missing.

const refusal = (schema: z.ZodType, raw: unknown, where = "body") => {
  try {
    validate(schema, raw, where);
  } catch (e) {
    if (isApiError(e)) return { message: e.message, at: e.at };
    throw e;
  }
  throw new Error("taken");
};

describe("validate: an unknown key", () => {
  it("`steps` for a batch's `actions` is named as unknown, with actions as what was meant", () => {
    expect(refusal(BatchBodySchema, { steps: [{ type: "wait", ms: 10 }] })).toEqual({
      message: 'unknown key "steps" in the body (did you mean "actions"?)',
      at: undefined,
    });
  });

  it("inside an object, at its path; several missing keys are listed, not guessed", () => {
    const s = z.strictObject({ to: z.strictObject({ x: z.number(), y: z.number() }) });
    expect(refusal(s, { to: { X: 1, y: 2 } })).toEqual({ message: 'unknown key "X" in to (did you mean "x"?)', at: "to" });
    expect(refusal(s, { to: { a: 1 } }).message).toBe('unknown key "a" in to (missing: "x", "y")');
  });

  it("an unknown key beside a complete body, and a wrong value with no unknown key, are as before", () => {
    expect(refusal(BatchBodySchema, { actions: [{ type: "wait", ms: 10 }], extra: 1 }).message).toBe('unknown key "extra" in the body');
    expect(refusal(BatchBodySchema, {}).message).toMatch(/^actions: /);
  });
});
