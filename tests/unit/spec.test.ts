import { describe, expect, it } from "vitest";
import {
  CreateBoxSchema,
  DEFAULT_FEATURES,
  canonicalJson,
  imageRequest,
  normalizePlacement,
  normalizeSpec,
  specDigest,
} from "~/models/spec.server";
import { parseJsonText } from "~/edge/route.server";
import { appFiles, normalizeRequest, x11Dockerfile } from "~/runtime/image-source.server";
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
    for (const name of ["jq; rm -rf /", "JQ", "-o", "a b", "$(x)", "", "x11vnc-", "a-", "jq=1.6", "jq/bookworm", "jq:amd64"]) {
      expect(refusal(() => parse({ spec: { desktop: { packages: [name] } } })).code, name).toBe("bad_request");
      expect(refusal(() => parse({ spec: { apps: { x: { packages: [name], argv: ["x"] } } } })).message, name).toContain("packages");
    }
  });

  it("refuses apt's remove suffix (x11vnc- would build an image without x11vnc) and takes real names, g++ included", () => {
    const says = refusal(() => parse({ spec: { desktop: { packages: ["jq", "x11vnc-"] } } })).message;
    expect(says).toContain("packages.1");
    expect(says).toContain("not ending in -");
    for (const name of ["g++", "libstdc++6", "x11-apps", "python3.11", "jq", "0ad", "a", "lib32gcc-s1"]) {
      expect(normalizeSpec(parse({ spec: { desktop: { packages: [name] } } }).spec).desktop.packages, name).toEqual([name]);
    }
    // The Dockerfile's own check, for images asked for by other ways than a create body.
    expect(() => normalizeRequest({ features: [], packages: ["x11vnc-"] })).toThrow(/not a Debian package name/);
    expect(() => normalizeRequest({ features: [], packages: [], apps: [{ name: "x", packages: ["x11vnc-"], argv: ["x"] }] })).toThrow(/not a Debian package name/);
    expect(x11Dockerfile(normalizeRequest({ features: [], packages: ["g++"] }), "holm-base:x")).toMatch(/install --no-install-recommends .*g\+\+/);
  });

  it("takes Wayland desktops (x11_apps by default, a dock when asked: waybar, not tint2)", () => {
    const wl = normalizeSpec({ desktop: { server: "wayland" } });
    expect(wl.desktop).toMatchObject({ server: "wayland", features: ["accessibility", "video", "wide_fonts", "x11_apps"] });
    expect(imageRequest(wl)).toMatchObject({ desktop: "wayland" });
    expect(imageRequest(normalizeSpec({}))).not.toHaveProperty("desktop");
    expect(specDigest(wl)).not.toBe(specDigest(normalizeSpec({})));
    const docked = x11Dockerfile(imageRequest(normalizeSpec({ desktop: { server: "wayland", features: ["dock"] } })), "holm-base:x");
    expect(docked).toContain("# feature: dock");
    expect(docked).toMatch(/install --no-install-recommends waybar/);
    expect(docked).not.toContain("tint2");
    expect(x11Dockerfile(imageRequest(normalizeSpec({ desktop: { features: ["dock"] } })), "holm-base:x")).toMatch(/install --no-install-recommends tint2/);
    // The image: sway, wayvnc, grim, wtype, wl-clipboard, XWayland and xhost; the runtime folders
    // made at build (root in a box cannot chown); an X11 image has none of it.
    const dockerfile = x11Dockerfile(imageRequest(wl), "holm-base:x");
    expect(dockerfile).toContain("install --no-install-recommends sway wayvnc grim wtype wl-clipboard xwayland x11-xserver-utils");
    expect(dockerfile).toMatch(/useradd .* desk/);
    expect(dockerfile).toContain('holm.desktop="wayland"');
    expect(x11Dockerfile(imageRequest(normalizeSpec({})), "holm-base:x")).not.toMatch(/sway|desk/);
  });

  it("takes direct viewer sockets (auth token or password, bind loopback or any); bind any needs auth", () => {
    expect(normalizeSpec({}).policy).toEqual({ network: true, auth: "none", bind: "loopback" });
    expect(normalizeSpec({ policy: { auth: "token" } }).policy).toEqual({ network: true, auth: "token", bind: "loopback" });
    expect(normalizeSpec({ policy: { auth: "password", bind: "any" } }).policy).toEqual({ network: true, auth: "password", bind: "any" });
    for (const policy of [{ bind: "any" as const }, { bind: "any" as const, auth: "none" as const }]) {
      const e = refusal(() => normalizeSpec({ policy }));
      expect(e.code).toBe("bad_request");
      expect(e.message).toContain("policy.auth token or password");
    }
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

describe("spec.apps", () => {
  const eyes = { packages: ["x11-apps", "x11-apps"], argv: ["xeyes", "-fg", "red; rm -rf /"], title: "Eyes", window_class: "XEyes" };

  it("keeps apps in name order, packages sorted and unique, and changes the digest (not an empty one)", () => {
    const spec = normalizeSpec(parse({ spec: { apps: { zed: { argv: ["z"] }, eyes } } }).spec);
    expect(Object.keys(spec.apps)).toEqual(["eyes", "zed"]);
    expect(spec.apps.eyes).toEqual({ ...eyes, packages: ["x11-apps"] });
    expect(specDigest(normalizeSpec({ apps: {} }))).toBe(specDigest(normalizeSpec({})));
    expect(specDigest(spec)).not.toBe(specDigest(normalizeSpec({})));
    expect(imageRequest(spec).apps?.map((a) => a.name)).toEqual(["eyes", "zed"]);
    expect(imageRequest(normalizeSpec({})).apps).toBeUndefined();
  });

  it("refuses a bad name, no argv, a line break in a title, a catalog name, and more than 16", () => {
    for (const apps of [{ "Eyes!": { argv: ["x"] } }, { e: { argv: [] } }, { e: { argv: ["x"], title: "a\nb" } }, { e: { argv: ["x"], exec: "x" } }]) {
      expect(refusal(() => parse({ spec: { apps } })).code, JSON.stringify(apps)).toBe("bad_request");
    }
    expect(refusal(() => normalizeSpec({ apps: { xterm: { argv: ["xterm"] } } })).message).toMatch(/catalog/);
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`a${i}`, { argv: ["x"] }]));
    expect(refusal(() => parse({ spec: { apps: many } })).code).toBe("bad_request");
  });

  it("refuses what the image's own check (checkApp) refuses, naming the field: a NUL in argv, a title or class with a line end of any kind", () => {
    const at = (apps: unknown) => refusal(() => parse({ spec: { apps } }));
    expect(at({ e: { argv: ["a\u0000b"] } }).message).toMatch(/^spec\.apps\.e\.argv\.0: /);
    expect(at({ e: { argv: ["x", "\u0000"] } }).message).toMatch(/^spec\.apps\.e\.argv\.1: /);
    for (const c of ["\u0085", "\u2028", "\u2029", "\u009b"]) {
      expect(at({ e: { argv: ["x"], title: `a${c}b` } }).message, JSON.stringify(c)).toMatch(/^spec\.apps\.e\.title: /);
      expect(at({ e: { argv: ["x"], window_class: `a${c}b` } }).message, JSON.stringify(c)).toMatch(/^spec\.apps\.e\.window_class: /);
      // The second guard, where the text goes into the image, agrees.
      expect(() => normalizeRequest({ features: [], packages: [], apps: [{ name: "e", packages: [], argv: ["x"], title: `a${c}b` }] })).toThrow(/one line/);
    }
    // What people write is still taken.
    expect(normalizeSpec(parse({ spec: { apps: { e: { argv: ["x"], title: "Éditeur — 中文 ✓" } } } }).spec).apps.e!.title).toBe("Éditeur — 中文 ✓");
  });

  it("refuses a __proto__ key anywhere in a body, naming where (z.record would drop it unseen)", () => {
    const text = (t: string) => refusal(() => parseJsonText(t, CreateBoxSchema));
    expect(text('{"spec":{"apps":{"__proto__":{"argv":["x"]}}}}').message).toMatch(/^spec\.apps\.__proto__: /);
    expect(text('{"metadata":{"labels":{"a":"b","__proto__":"c"}}}').message).toMatch(/^metadata\.labels\.__proto__: /);
    expect(text('{"__proto__":{}}').code).toBe("bad_request");
    // Deep nesting is answered, not a stack overflow.
    expect(text(`${"[".repeat(100_000)}${"]".repeat(100_000)}`).code).toBe("bad_request");
  });

  it("goes into the image as NUL-separated argv and a desktop entry whose Exec is ours alone", () => {
    const req = imageRequest(normalizeSpec({ apps: { eyes } }));
    const files = appFiles(req.apps!);
    expect(files.find((f) => f.rel === "apps/eyes.argv")?.content).toBe("xeyes\0-fg\0red; rm -rf /\0");
    const entry = files.find((f) => f.rel === "apps/holm-app-eyes.desktop")!.content;
    expect(entry).toContain("Exec=xargs -0 -a /opt/holm/apps/eyes.argv env --\n");
    expect(entry).toContain("Name=Eyes\n");
    expect(entry).toContain("StartupWMClass=XEyes\n");
    const dockerfile = x11Dockerfile(req, "holm-base:x");
    expect(dockerfile).toContain("apt-get -qy install --no-install-recommends x11-apps");
    expect(dockerfile).toContain("COPY apps/ /opt/holm/apps/");
    expect(x11Dockerfile(imageRequest(normalizeSpec({})), "holm-base:x")).not.toContain("apps");
  });
});
