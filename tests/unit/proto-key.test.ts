import { describe, expect, it } from "vitest";
import { z } from "zod";
import { validate } from "~/utils/validate.server";

// A `__proto__` key anywhere in a body is a 400 naming where it is (utils/proto-key.ts). A body
// nested thousands deep names a path as long as the body: the message says its two ends only.

const refusal = (raw: unknown) => {
  try {
    validate(z.looseObject({}), raw, "body");
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("not refused");
};

describe("a __proto__ key's refusal", () => {
  it("names a short path whole", () => {
    expect(refusal(JSON.parse('{"metadata":{"labels":{"__proto__":"x"}}}'))).toBe('metadata.labels.__proto__: "__proto__" cannot be a key in the body');
  });

  it("cuts a deep path to its start and its end, so the message stays short", () => {
    const depth = 5000;
    const text = `${'{"deep":'.repeat(depth)}{"__proto__":1}${"}".repeat(depth)}`;
    const message = refusal(JSON.parse(text));
    expect(message.length).toBeLessThan(300);
    expect(message).toMatch(/^deep\.deep\.deep.*….*deep\.__proto__: "__proto__" cannot be a key in the body$/);
  });
});
