import type { ViewerAuth } from "~/protocol/direct-viewer";
import { createHash } from "node:crypto";
import { z } from "zod";
import { BoxMetadataSchema } from "~/protocol/api-box";
import { FEATURES, type Feature, type ImageRequest } from "~/runtime/runtime";
import { badRequest, unsupported } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";
import { catalogApp } from "./catalog.server";
import { MIN_BOX_MEMORY, SIZE_RE, parseBytes } from "~/utils/size";

export const DEFAULT_FEATURES: Feature[] = ["accessibility", "dock", "video", "wide_fonts"];
/**
 * A Wayland box's defaults (seed 000: `x11_apps` is a default there). The dock (waybar there) is
 * one when asked: by default a Wayland box keeps the whole screen for its windows (ADR 0030).
 */
export const WAYLAND_DEFAULT_FEATURES: Feature[] = ["accessibility", "video", "wide_fonts", "x11_apps"];
export const DEFAULT_WIDTH = 1280;
export const DEFAULT_HEIGHT = 800;
export const DEFAULT_LIFETIME_SECS = 3600;
export const MAX_LIFETIME_SECS = 30 * 24 * 3600;

// Not ending in "-": apt-get reads `x11vnc-` as "remove x11vnc" (a trailing "+" means install,
// and real names end in it: g++). The same rule as APT_PACKAGE_RE (runtime/image-source.server.ts).
const PackageName = z.string().regex(/^[a-z0-9](?:[a-z0-9+.-]{0,126}[a-z0-9+.])?$/, "not an apt package name (letters, digits, + . -, not ending in -)");

/** A DNS host name (RFC 1123 labels, dot-separated): no scheme, port, path or spaces. */
const HOST_NAME_RE = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

export const DesktopSchema = z.strictObject({
  server: z.enum(["x11", "wayland"]).optional(),
  width: z.number().int().min(320).max(7680).optional(),
  height: z.number().int().min(240).max(4320).optional(),
  screens: z.number().int().min(1).max(8).optional(),
  features: z.array(z.enum(FEATURES)).max(FEATURES.length).optional(),
  packages: z.array(PackageName).max(64).optional(),
});

export const PolicySchema = z.strictObject({
  network: z.boolean().optional(),
  auth: z.enum(["none", "password", "token"]).optional(),
  bind: z.enum(["loopback", "any"]).optional(),
  /** The host name put in the box's viewer URLs (scheme and port stay the server's). */
  advertise: z.string().regex(HOST_NAME_RE, "a host name such as viewer.example.com, with no scheme, port or path").optional(),
});

/**
 * One line of text for a desktop entry: no control characters (a newline would add a key), C1's
 * included (U+0085 is NEL), nor U+2028/U+2029, which JavaScript's regular expressions take for
 * line ends (the Wayland dock's config.cjs reads the entry). As ENTRY_TEXT_RE (image-source.server.ts).
 */
const EntryText = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$/, "one line of text, no control characters or line/paragraph separators");

/** `spec.apps`: applications outside the catalog, installed when the box's image is built. */
export const AppSpecSchema = z.strictObject({
  /** Debian packages the app needs (none: it is already in the image). */
  packages: z.array(PackageName).max(32).optional(),
  /** What starts it: the `launch` step runs this (then the step's `args`), and so does its dock launcher. */
  argv: z.array(z.string().min(1).max(4096).regex(/^[^\0]+$/, "no NUL bytes (the image keeps argv NUL-separated)")).min(1).max(32),
  /** The name on its dock launcher and in its desktop entry; the app's key by default. */
  title: EntryText.optional(),
  /** Its window's class, as `await_window` and `windows` see it. */
  window_class: EntryText.optional(),
});

/** An app's key in `spec.apps`: what `launch` names it by. */
export const AppNameSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, "lowercase letters, digits, '_' and '-', at most 32");
export const MAX_SPEC_APPS = 16;

export const SpecSchema = z.strictObject({
  desktop: DesktopSchema.optional(),
  apps: z
    .record(AppNameSchema, AppSpecSchema)
    .refine((apps) => Object.keys(apps).length <= MAX_SPEC_APPS, `at most ${MAX_SPEC_APPS} apps`)
    .optional(),
  policy: PolicySchema.optional(),
});

const Lifetime = z.number().int().min(60, "must be at least 60 seconds").max(MAX_LIFETIME_SECS);

/** A browser profile's name (`placement.profile`, `DELETE /v1/profiles/{name}`). */
export const PROFILE_NAME_RULE = "letters, digits, '_', '.', '-', 1 to 64, not only dots";
/** What an earlier version let a profile be named: one still stored may be removed by its name. */
export const PROFILE_NAME_CHARS = /^[A-Za-z0-9_.-]{1,64}$/;
/** Only dots ('.', '..') is refused: a URL path cannot name it (`DELETE /v1/profiles/..` is normalised away). */
export const ProfileNameSchema = z
  .string()
  .regex(PROFILE_NAME_CHARS, PROFILE_NAME_RULE)
  .refine((n) => !/^\.+$/.test(n), PROFILE_NAME_RULE);

export const PlacementSchema = z.strictObject({
  runtime: z.string().min(1).max(64).optional(),
  memory: z.string().regex(SIZE_RE, 'a size such as "2g" or "512m"').optional(),
  cpus: z
    .string()
    .regex(/^([0-9]+(\.[0-9]+)?)$/, 'a number such as "2" or "0.5"')
    // 0.01: the engine's smallest share (less fails at the container's start, in runc's words).
    // The most is the machine's, checked at admission (app/runtime/docker-admit.server.ts).
    .refine((v) => Number(v) >= 0.01 && Number(v) <= 256, "between 0.01 and 256")
    .optional(),
  expires_after_secs: Lifetime.optional(),
  idle_timeout_secs: Lifetime.optional(),
  persistent: z.boolean().optional(),
  profile: ProfileNameSchema.optional(),
});

export const CreateBoxSchema = z.strictObject({
  spec: SpecSchema.optional(),
  placement: PlacementSchema.optional(),
  /** holm's: the box's name and labels, kept beside the spec (not in it, nor in spec_digest). */
  metadata: BoxMetadataSchema.optional(),
});

export type Spec = z.infer<typeof SpecSchema>;
export type Placement = z.infer<typeof PlacementSchema>;

/** A spec with every default filled in: the form that is hashed and launched. */
export interface NormalSpec {
  desktop: {
    server: "x11" | "wayland";
    width: number;
    height: number;
    screens: number;
    features: Feature[];
    packages: string[];
  };
  apps: Record<string, NormalApp>;
  /** auth `token`/`password`: the box serves direct viewer sockets (app/protocol/direct-viewer.ts), published per `bind`. */
  policy: { network: boolean; auth: ViewerAuth; bind: "loopback" | "any"; advertise?: string };
}

export interface NormalApp {
  packages: string[];
  argv: string[];
  title?: string;
  window_class?: string;
}

export interface NormalPlacement {
  runtime: string;
  memory?: string;
  cpus?: string;
  expires_after_secs: number;
  idle_timeout_secs?: number;
  persistent: boolean;
  profile?: string;
}

/** Fills defaults and refuses what this server cannot run (400 `unsupported`). */
export function normalizeSpec(spec: Spec = {}): NormalSpec {
  const d = spec.desktop ?? {};
  const server = d.server ?? "x11";
  const p = spec.policy ?? {};
  // A published port with nothing to check at it would be an open desktop: `any` needs auth.
  if (p.bind === "any" && (p.auth ?? "none") === "none") {
    throw badRequest("spec.policy.bind: any publishes the box's direct viewer socket, which needs policy.auth token or password");
  }
  const features = d.features ? [...new Set(d.features)].sort() : [...(server === "wayland" ? WAYLAND_DEFAULT_FEATURES : DEFAULT_FEATURES)];
  return {
    desktop: {
      server,
      width: d.width ?? DEFAULT_WIDTH,
      height: d.height ?? DEFAULT_HEIGHT,
      screens: d.screens ?? 1,
      features,
      packages: [...new Set(d.packages ?? [])].sort(),
    },
    apps: normalApps(spec.apps),
    policy: {
      network: p.network ?? true,
      auth: p.auth ?? "none",
      bind: p.bind ?? "loopback",
      ...(p.advertise ? { advertise: advertisable(p.advertise.toLowerCase()) } : {}),
    },
  };
}

/** Apps by name, in name order, packages sorted; a name the catalog has is refused (`launch` would be ambiguous). */
function normalApps(apps: Spec["apps"] = {}): Record<string, NormalApp> {
  const out: Record<string, NormalApp> = {};
  for (const name of Object.keys(apps).sort()) {
    if (catalogApp(name)) throw badRequest(`spec.apps.${name}: the catalog has an app by that name; name yours otherwise`);
    const a = apps[name]!;
    out[name] = {
      packages: [...new Set(a.packages ?? [])].sort(),
      argv: a.argv,
      ...(a.title !== undefined && { title: a.title }),
      ...(a.window_class !== undefined && { window_class: a.window_class }),
    };
  }
  return out;
}

/**
 * A name a viewer URL may carry: the server must answer to it (else the page is a 421), and only
 * the administrator adds names to that (HOLM_ADVERTISE_HOSTS, or HOLM_PUBLIC_URL's own host).
 */
function advertisable(name: string): string {
  const e = env();
  const allowed = new Set([...(e.HOLM_ADVERTISE_HOSTS ?? []), ...(e.HOLM_PUBLIC_URL ? [new URL(e.HOLM_PUBLIC_URL).hostname.toLowerCase()] : [])]);
  if (allowed.has(name)) return name;
  const known = allowed.size ? [...allowed].join(", ") : "none";
  throw badRequest(
    `spec.policy.advertise: this server does not answer to ${name}; it advertises only HOLM_ADVERTISE_HOSTS and HOLM_PUBLIC_URL's host (now: ${known})`,
  );
}

export function normalizePlacement(placement: Placement = {}, defaultRuntime: string): NormalPlacement {
  const out: NormalPlacement = {
    runtime: placement.runtime ?? defaultRuntime,
    expires_after_secs: placement.expires_after_secs ?? DEFAULT_LIFETIME_SECS,
    persistent: placement.persistent ?? false,
  };
  if (placement.memory) out.memory = checkMemory(placement.memory.toLowerCase());
  if (placement.cpus) out.cpus = placement.cpus;
  if (placement.idle_timeout_secs) out.idle_timeout_secs = placement.idle_timeout_secs;
  if (placement.profile) out.profile = placement.profile;
  return out;
}

/** A placement's memory within what this server allows (the floor keeps "2" from meaning 2 bytes). */
function checkMemory(memory: string): string {
  const max = env().HOLM_BOX_MEMORY_MAX;
  if (parseBytes(memory) > parseBytes(max)) {
    throw badRequest(`placement.memory ${memory} is more than this server allows a box (${max}, HOLM_BOX_MEMORY_MAX)`);
  }
  if (parseBytes(memory) < parseBytes(MIN_BOX_MEMORY)) {
    throw badRequest(`placement.memory ${memory} is less than the ${MIN_BOX_MEMORY} a desktop needs`);
  }
  return memory;
}

/** The memory limit a box launches with: its placement's, else the server's default. */
export function boxMemory(placement: Pick<NormalPlacement, "memory">): string {
  return placement.memory ?? env().HOLM_BOX_MEMORY;
}

/** Stable JSON: keys sorted at every depth, so equal specs hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function specDigest(spec: NormalSpec): string {
  return createHash("sha256").update(canonicalJson(spec)).digest("hex");
}

export function imageRequest(spec: NormalSpec): ImageRequest {
  const apps = Object.entries(spec.apps ?? {}).map(([name, a]) => ({ name, ...a }));
  return {
    features: spec.desktop.features,
    packages: spec.desktop.packages,
    ...(apps.length && { apps }),
    ...(spec.desktop.server === "wayland" && { desktop: "wayland" as const }),
  };
}
