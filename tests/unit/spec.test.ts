import { describe, expect, it } from "vitest";
import {
  CreateBoxSchema,
  DEFAULT_FEATURES,
  canonicalJson,
  normalizePlacement,
  normalizeSpec,
  specDigest,
} from "~/models/spec.server";
import { parseJsonText } from "~/edge/route.server";
import { refusal } from "../support/refusal";

const parse = (body: unknown) => parseJsonText(JSON.stringify(body), CreateBoxSchema);


describe("create-box body", () => {
  it("accepts {} and the empty body, filling defaults", () => {
    for (const text of ["{}", "", "  "]) {
      const input = parseJsonText(text, CreateBoxSchema);
      const spec = normalizeSpec(input.spec);
      expect(spec.desktop).toEqual({
        server: "x11",
        width: 1280,
        height: 800,
        screens: 1,
        features: DEFAULT_FEATURES,
        packages: [],
      });
      expect(spec.policy.network).toBe(true);
      expect(normalizePlacement(input.placement, "docker")).toEqual({
        runtime: "docker",
        expires_after_secs: 3600,
        persistent: false,
      });
    }
  });

  it("refuses unknown keys at any depth, naming the key", () => {
    const top = refusal(() => parse({ spce: {} }));
    expect(top.code).toBe("bad_request");
    expect(top.message).toContain('"spce"');
    const deep = refusal(() => parse({ spec: { desktop: { widht: 100 } } }));
    expect(deep.message).toMatch(/"widht".*spec\.desktop/);
    const placement = refusal(() => parse({ placement: { ttl: 5 } }));
    expect(placement.message).toContain('"ttl"');
  });

  it("refuses malformed JSON and wrong types with 400", () => {
    expect(refusal(() => parseJsonText("{", CreateBoxSchema)).status).toBe(400);
    expect(refusal(() => parseJsonText("[]", CreateBoxSchema)).status).toBe(400);
    expect(refusal(() => parseJsonText("null", CreateBoxSchema)).status).toBe(400);
    expect(refusal(() => parse({ spec: { desktop: { width: "wide" } } })).message).toContain("spec.desktop.width");
    expect(refusal(() => parse({ spec: { policy: { network: "no" } } })).code).toBe("bad_request");
  });

  it("refuses out-of-range sizes and screen counts", () => {
    for (const desktop of [{ width: 10 }, { height: 100_000 }, { screens: 0 }, { screens: 9 }, { width: 1.5 }]) {
      expect(refusal(() => parse({ spec: { desktop } })).status).toBe(400);
    }
    expect(parse({ spec: { desktop: { screens: 8 } } }).spec?.desktop?.screens).toBe(8);
  });

  it("refuses lifetimes under 60 seconds", () => {
    expect(refusal(() => parse({ placement: { expires_after_secs: 59 } })).message).toContain("60");
    expect(refusal(() => parse({ placement: { idle_timeout_secs: 10 } })).message).toContain("60");
    expect(parse({ placement: { idle_timeout_secs: 60 } }).placement?.idle_timeout_secs).toBe(60);
  });

  it("refuses package names that are not apt names (nothing reaches a Dockerfile)", () => {
    for (const name of ["jq; rm -rf /", "JQ", "-o", "a b", "$(x)", ""]) {
      expect(refusal(() => parse({ spec: { desktop: { packages: [name] } } })).code).toBe("bad_request");
    }
  });

  it("answers `unsupported` for what the docker runtime cannot do", () => {
    expect(refusal(() => normalizeSpec({ desktop: { server: "wayland" } })).code).toBe("unsupported");
    expect(refusal(() => normalizeSpec({ policy: { bind: "any" } })).code).toBe("unsupported");
  });

  it("refuses bad limits", () => {
    expect(refusal(() => parse({ placement: { memory: "lots" } })).code).toBe("bad_request");
    expect(refusal(() => parse({ placement: { cpus: "0" } })).code).toBe("bad_request");
    expect(parse({ placement: { memory: "2g", cpus: "1.5" } }).placement).toEqual({ memory: "2g", cpus: "1.5" });
  });

  it("keeps placement.memory between the desktop's floor and the server's maximum (HOLM_BOX_MEMORY_MAX, 8g)", () => {
    expect(normalizePlacement({ memory: "8G" }, "docker").memory).toBe("8g");
    expect(normalizePlacement({ memory: "256m" }, "docker").memory).toBe("256m");
    for (const memory of ["9g", "255m", "2"]) {
      const e = refusal(() => normalizePlacement({ memory }, "docker"));
      expect(e.code).toBe("bad_request");
      expect(e.message).toContain("placement.memory");
    }
  });
});

describe("spec digest", () => {
  it("is the same for the default features and the same features listed by name, in any order", () => {
    const a = specDigest(normalizeSpec({}));
    const b = specDigest(normalizeSpec({ desktop: { features: ["wide_fonts", "video", "dock", "accessibility"] } }));
    const c = specDigest(normalizeSpec({ desktop: { features: ["dock", "accessibility", "wide_fonts", "video", "dock"] } }));
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes with the desktop, not with placement", () => {
    const base = specDigest(normalizeSpec({}));
    expect(specDigest(normalizeSpec({ desktop: { features: [] } }))).not.toBe(base);
    expect(specDigest(normalizeSpec({ desktop: { width: 1024 } }))).not.toBe(base);
    expect(specDigest(normalizeSpec({ desktop: { packages: ["jq"] } }))).not.toBe(base);
    expect(specDigest(normalizeSpec({ policy: { network: false } }))).not.toBe(base);
  });

  it("canonical JSON sorts keys at every depth", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}',
    );
  });
});
