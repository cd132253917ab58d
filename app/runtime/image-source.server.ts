// What goes into a box image, with no Docker in it: the package lists, the Dockerfile text, and the
// tags, each a hash of everything that goes into its image, so a changed source never reuses an
// old image and an unchanged one is never rebuilt. Apart from image-builder.server.ts (which runs
// the builds) so that computing a tag or checking a request needs no daemon, and so the builder
// reads as the steps of a build.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FEATURES, type Feature, type ImageApp, type ImageRequest } from "./runtime";

/**
 * Debian package names as apt accepts them; nothing else may reach a Dockerfile. Not ending in
 * "-", which apt-get install reads as "remove this one" (`x11vnc-`); "+" may end one (g++).
 */
export const APT_PACKAGE_RE = /^[a-z0-9](?:[a-z0-9+.-]{0,126}[a-z0-9+.])?$/;

const CORE_PACKAGES = [
  "xvfb",
  "fluxbox",
  "chromium",
  "x11vnc",
  "xdotool",
  "wmctrl",
  "imagemagick",
  "xclip",
  "xterm",
  "x11-utils",
  "procps",
  "dbus-x11",
  "nodejs",
  "fonts-dejavu-core",
  "ca-certificates",
] as const;

const FEATURE_PACKAGES: Record<Feature, readonly string[]> = {
  wide_fonts: ["fonts-noto-cjk", "fonts-noto-color-emoji"],
  video: ["ffmpeg"],
  dock: ["tint2"],
  accessibility: ["at-spi2-core", "python3-pyatspi"],
  audio: ["pulseaudio"],
  x11_apps: ["x11-apps"],
};

/**
 * A Wayland box's desktop (ADR 0030), on top of the core layer (Chromium, Node and the tools the
 * agent shares with X11 boxes): sway as the compositor, wayvnc for viewers and the agent's input,
 * grim for frames, wtype for text, wl-clipboard. XWayland comes with `x11_apps`.
 */
const WAYLAND_PACKAGES = ["sway", "wayvnc", "grim", "wtype", "wl-clipboard"] as const;
/** Features that are other packages on Wayland: the dock is waybar (tint2 is an X11 client). */
const WAYLAND_FEATURE_PACKAGES: Partial<Record<Feature, readonly string[]>> = { dock: ["waybar"] };

const BASE_REPO = "holm-base";
const X11_REPO = "holm-x11";
export const AGENT_BUNDLE = "build/agent/agent.mjs";
export const AGENT_SOURCES = "images/x11/agent";
/** Bundled into the agent too: the wire shared with the server (the action vocabulary, errors, paths). */
export const AGENT_SHARED_SOURCES = "app/protocol";
export const AGENT_BUILD_SCRIPT = "scripts/build-agent.mjs";

// This module runs from app/runtime under tsx and from build/server once bundled: the repo root
// is the nearest ancestor holding images/, wherever that is.
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "images", "x11")) && existsSync(path.join(dir, "package.json"))) {
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

/** The repo root: the builder runs its scripts from here and copies the image sources from it. */
export const root = findRoot();

export interface SourceFile {
  /** Path relative to the repo root, with forward slashes. */
  rel: string;
  abs: string;
}

// Dotfiles are skipped so an editor's swap file does not make a new image.
export function listFiles(relDir: string): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (rel: string): void => {
    const abs = path.join(root, rel);
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const childRel = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(childRel);
      else if (entry.isFile()) out.push({ rel: childRel, abs: path.join(root, childRel) });
    }
  };
  walk(relDir);
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

// Length-prefixed so that no two different inputs can produce the same byte stream.
function hashPart(hash: ReturnType<typeof createHash>, name: string, data: string | Buffer): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  hash.update(`${name}\0${bytes.length}\0`);
  hash.update(bytes);
}

function hashFiles(hash: ReturnType<typeof createHash>, files: SourceFile[]): void {
  for (const f of files) hashPart(hash, `file:${f.rel}`, readFileSync(f.abs));
}

/** `holm-base:<hash of images/base + arch>`. */
export function baseImageTag(): string {
  const hash = createHash("sha256");
  hashPart(hash, "kind", "holm-base/1");
  hashFiles(hash, listFiles("images/base"));
  hashPart(hash, "arch", process.arch);
  return `${BASE_REPO}:${hash.digest("hex").slice(0, 16)}`;
}

/** Checks and puts a request in canonical form (sorted, unique); throws on anything unknown. */
export function normalizeRequest(req: ImageRequest): ImageRequest {
  const known: readonly string[] = FEATURES;
  for (const f of req.features) {
    if (!known.includes(f)) throw new Error(`unknown feature: ${JSON.stringify(f)}`);
  }
  for (const p of req.packages) {
    if (typeof p !== "string" || !APT_PACKAGE_RE.test(p)) {
      throw new Error(`not a Debian package name: ${JSON.stringify(p)}`);
    }
  }
  const sortUnique = <T extends string>(xs: readonly T[]): T[] =>
    [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const apps = (req.apps ?? []).map(checkApp).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (req.desktop !== undefined && req.desktop !== "wayland") throw new Error(`unknown desktop: ${JSON.stringify(req.desktop)}`);
  return {
    features: sortUnique(req.features),
    packages: sortUnique(req.packages),
    ...(apps.length && { apps }),
    ...(req.desktop === "wayland" && { desktop: "wayland" as const }),
  };
}

const APP_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
// As spec.server.ts's EntryText: C1 controls (U+0085 NEL) and U+2028/U+2029 end a line too, for some readers.
const ENTRY_TEXT_RE = /^[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,200}$/;

/** An app as an image holds it; checked again here, as its text goes into files of the image. */
function checkApp(a: ImageApp): ImageApp {
  if (!APP_NAME_RE.test(a.name)) throw new Error(`not an app name: ${JSON.stringify(a.name)}`);
  for (const p of a.packages) if (!APT_PACKAGE_RE.test(p)) throw new Error(`app ${a.name}: not a Debian package name: ${JSON.stringify(p)}`);
  if (!a.argv.length || a.argv.some((x) => typeof x !== "string" || x.includes("\0"))) throw new Error(`app ${a.name}: argv must be strings without NUL`);
  for (const t of [a.title, a.window_class]) if (t !== undefined && !ENTRY_TEXT_RE.test(t)) throw new Error(`app ${a.name}: not one line of text: ${JSON.stringify(t)}`);
  return { name: a.name, packages: [...new Set(a.packages)].sort(), argv: [...a.argv], ...(a.title && { title: a.title }), ...(a.window_class && { window_class: a.window_class }) };
}

/**
 * The files `spec.apps` adds to an image, under apps/ in the build context: each app's argv
 * (NUL-separated, so no quoting of any kind) and a desktop entry whose Exec runs that argv through
 * xargs (the name is the only text of ours on the line, and it is [a-z0-9_-]). The entrypoint puts
 * a launcher in the dock for each entry (images/x11/entrypoint.sh).
 */
export function appFiles(apps: readonly ImageApp[]): { rel: string; content: string }[] {
  return apps.flatMap((a) => [
    { rel: `apps/${a.name}.argv`, content: `${a.argv.join("\0")}\0` },
    {
      rel: `apps/holm-app-${a.name}.desktop`,
      content: [
        "[Desktop Entry]",
        "Type=Application",
        `Name=${a.title ?? a.name}`,
        `Exec=xargs -0 -a /opt/holm/apps/${a.name}.argv env --`,
        "Icon=application-x-executable",
        ...(a.window_class ? [`StartupWMClass=${a.window_class}`] : []),
        "Terminal=false",
        "",
      ].join("\n"),
    },
  ]);
}

function aptLayer(packages: readonly string[]): string {
  for (const p of packages) {
    // Checked again here because this is the one place text turns into a shell command.
    if (!APT_PACKAGE_RE.test(p)) throw new Error(`not a Debian package name: ${JSON.stringify(p)}`);
  }
  return (
    "RUN apt-get -q update \\\n" +
    ` && apt-get -qy install --no-install-recommends ${packages.join(" ")} \\\n` +
    " && apt-get clean && rm -rf /var/lib/apt/lists/*"
  );
}

/** The Dockerfile for a (normalized) request. Exported for tests. */
export function x11Dockerfile(req: ImageRequest, baseTag: string): string {
  const { features, packages } = normalizeRequest(req);
  const lines = [
    "# Generated by app/runtime/image-source.server.ts; do not edit.",
    `FROM ${baseTag}`,
    "ENV DEBIAN_FRONTEND=noninteractive",
    aptLayer(CORE_PACKAGES),
  ];
  if (req.desktop === "wayland") {
    // sway refuses to run as root, so it runs as `desk`. Root in a box has no capability to
    // chown or to pass permissions (ADR 0006), so the screens' runtime folders are made here,
    // desk's and shared with root through desk's group (root, the agent and wayvnc, reaches
    // sway's sockets through it); wayvnc's own socket is in a folder only root may enter.
    lines.push(
      "# desktop: wayland",
      // xhost: XWayland lets in only its own user, and the apps the agent starts run as root.
      aptLayer([...WAYLAND_PACKAGES, ...(features.includes("x11_apps") ? ["xwayland", "x11-xserver-utils"] : [])]),
      "RUN useradd --create-home --uid 1000 --shell /bin/bash desk && usermod -aG desk root \\\n" +
        " && install -d -m 711 /run/holm && install -d -m 700 /run/holm/vnc \\\n" +
        " && for n in 0 1 2 3 4 5 6 7; do install -d -o desk -g desk -m 770 /run/holm/wl-$n; done",
    );
  }
  // Fixed order, one layer each: images that share a prefix of features share those layers.
  for (const feature of FEATURES) {
    if (!features.includes(feature)) continue;
    const pkgs = (req.desktop === "wayland" && WAYLAND_FEATURE_PACKAGES[feature]) || FEATURE_PACKAGES[feature];
    lines.push(`# feature: ${feature}`, aptLayer(pkgs));
  }
  if (packages.length > 0) lines.push("# packages", aptLayer(packages));
  const apps = req.apps ? normalizeRequest(req).apps ?? [] : [];
  if (apps.length > 0) {
    const appPackages = [...new Set(apps.flatMap((a) => a.packages))].sort();
    lines.push(`# apps: ${apps.map((a) => a.name).join(", ")}`);
    if (appPackages.length > 0) lines.push(aptLayer(appPackages));
    lines.push("COPY apps/ /opt/holm/apps/", "RUN cp /opt/holm/apps/*.desktop /usr/share/applications/");
  }
  lines.push(
    `LABEL holm.image="x11" holm.features="${features.join(",")}" holm.packages="${packages.join(",")}"${req.desktop ? ` holm.desktop="${req.desktop}"` : ""}`,
    // A default for a bare `docker run`; the runtime passes its own.
    `ENV HOLM_FEATURES="${features.join(",")}"`,
    // No Docker healthcheck: nothing read it (the server asks the agent), and its exec every 5 s
    // cost an idle box 1.2 % of a core plus the engine's share (ADR 0016).
    "HEALTHCHECK NONE",
    'ENTRYPOINT ["/opt/holm/entrypoint.sh"]',
    // Last, in order of how often they change: an agent change rebuilds only the final layer.
    "COPY files/ /opt/holm/",
    "COPY agent.mjs /opt/holm/agent.mjs",
    "",
  );
  return lines.join("\n");
}

function agentBundlePath(): string {
  // Lets a test point at a bundle outside the repo without touching build/.
  return process.env.HOLM_AGENT_BUNDLE ?? path.join(root, AGENT_BUNDLE);
}

/** Everything a desktop image is made from, and the tag that names it. */
export interface X11Plan {
  tag: string;
  baseTag: string;
  dockerfile: string;
  files: SourceFile[];
  agentBundle: string;
  request: ImageRequest;
}

export function planX11(req: ImageRequest): X11Plan {
  const request = normalizeRequest(req);
  const baseTag = baseImageTag();
  const dockerfile = x11Dockerfile(request, baseTag);
  const agentBundle = agentBundlePath();
  if (!existsSync(agentBundle)) {
    throw new Error(`agent bundle ${agentBundle} is missing: run \`node ${AGENT_BUILD_SCRIPT}\``);
  }
  const files = [...listFiles("images/base"), ...listFiles("images/x11")];
  const hash = createHash("sha256");
  hashPart(hash, "kind", "holm-x11/1");
  hashFiles(hash, files);
  hashPart(hash, "agent", readFileSync(agentBundle));
  hashPart(hash, "features", request.features.join(","));
  hashPart(hash, "packages", request.packages.join(","));
  // Only when there are apps: every image without them keeps the tag it had.
  if (request.apps?.length) hashPart(hash, "apps", JSON.stringify(request.apps));
  if (request.desktop) hashPart(hash, "desktop", request.desktop);
  hashPart(hash, "arch", process.arch);
  // Covers what lives in this module (core packages, feature packages, layer layout).
  hashPart(hash, "dockerfile", dockerfile);
  const tag = `${X11_REPO}:${hash.digest("hex").slice(0, 16)}`;
  return { tag, baseTag, dockerfile, files, agentBundle, request };
}

/**
 * The tag `ensureX11Image` would produce for `req`, without building. Reads the image sources
 * and the agent bundle; throws when the bundle has not been built.
 */
export function imageTag(req: ImageRequest): string {
  return planX11(req).tag;
}
