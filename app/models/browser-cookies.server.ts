import type { BrowserContext } from "playwright-core";
import { z } from "zod";
import { TabRef } from "~/protocol/action-fields";
import { ApiError, isApiError } from "~/utils/api-error.server";
import { browserOf } from "./page-browser.server";
import type { ScreenTarget } from "./screen.server";

// A box browser's cookies (seed: Browser state, `…/cookies`), through Playwright on the screen's
// default context (where the box's Chromium keeps every tab's cookies). Cookie values are the
// browser's: they are answered to the caller who asks for them, but never put in a log line or
// an error message (`scrub`).

/** An http(s) URL, as the cookie routes and `origins` take it. */
export const HttpUrl = z.string().max(8192).refine((s) => {
  try {
    return ["http:", "https:"].includes(new URL(s).protocol);
  } catch {
    return false;
  }
}, "an http:// or https:// URL");

const SameSite = z.enum(["Lax", "Strict", "None"]);

export const CookieSchema = z.strictObject({
  name: z.string().min(1).max(4096),
  value: z.string().max(4096),
  domain: z.string().min(1).max(255).optional(),
  path: z.string().startsWith("/").max(1024).optional(),
  /** Unix time in seconds; -1 (or none): a session cookie. */
  expires: z.number().refine((n) => n === -1 || (n > 0 && n < 253402300800), "Unix seconds, or -1 for a session cookie").optional(),
  http_only: z.boolean().optional(),
  secure: z.boolean().optional(),
  same_site: SameSite.optional(),
});

export const SetCookiesSchema = z
  .strictObject({ url: HttpUrl.optional(), cookies: z.array(CookieSchema).min(1).max(1000) })
  .superRefine((body, ctx) => {
    body.cookies.forEach((c, i) => {
      if (!c.domain && !body.url) {
        ctx.addIssue({ code: "custom", path: ["cookies", i, "domain"], message: "a cookie needs `domain` (and `path`), or the body needs `url`" });
      }
    });
  });

export type SetCookies = z.output<typeof SetCookiesSchema>;

export interface CookieJson {
  name: string;
  value: string;
  domain: string;
  path: string;
  expires: number;
  http_only: boolean;
  secure: boolean;
  same_site: "Lax" | "Strict" | "None";
}

/** The query of the box-wide state and cookie routes: `tab` picks the screen whose browser has it. */
export const TabQuery = { tab: TabRef.optional() };
/** `GET` / `DELETE …/cookies`: `?url=` (and `tab`). */
export const CookieQuery = { url: HttpUrl.optional() };

/**
 * The default context of a screen's browser, where Chromium keeps every tab's cookies and
 * storage. It exists with no tab open, which pageOf's front tab would need.
 */
export async function contextOf(t: ScreenTarget): Promise<BrowserContext> {
  const browser = await browserOf(t.box, t.screen);
  const context = browser.contexts()[0];
  if (!context) throw new ApiError("screen_unavailable", `screen ${t.screen}'s browser has no context yet`, { retryable: true });
  return context;
}

/**
 * Runs a browser call; what it throws (Playwright's message, which may quote what it was given)
 * becomes `code` with its first line, every value of `hide` cut out of it.
 */
export async function scrubbed<T>(what: string, code: "bad_request" | "failed", hide: readonly string[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isApiError(e)) throw e;
    let msg = String((e as Error).message ?? e).split("\n")[0]!.slice(0, 300);
    for (const v of hide) if (v.length >= 3) msg = msg.split(v).join("…");
    throw new ApiError(code, `${what}: ${msg}`);
  }
}

export async function listCookies(context: BrowserContext, url?: string): Promise<CookieJson[]> {
  const cookies = await scrubbed("reading cookies", "failed", [], () => context.cookies(url));
  return cookies.map((c) => ({
    name: c.name,
    value: c.value,
    domain: c.domain,
    path: c.path,
    expires: c.expires,
    http_only: c.httpOnly,
    secure: c.secure,
    same_site: c.sameSite,
  }));
}

export async function setCookies(context: BrowserContext, body: SetCookies): Promise<{ set: number; expired: string[] }> {
  const url = body.url ? new URL(body.url) : undefined;
  const cookies = body.cookies.map((c) => {
    const flags = { httpOnly: c.http_only, sameSite: c.same_site, expires: c.expires };
    // Given as domain and path (the url's host, "/"), never as a url: with a url, Playwright sets
    // `secure` from its scheme whatever the cookie asks.
    const secure = c.secure ?? url?.protocol === "https:";
    return { name: c.name, value: c.value, domain: c.domain ?? url!.hostname, path: c.path ?? "/", secure, ...flags };
  });
  await scrubbed("the browser refused the cookies", "bad_request", body.cookies.map((c) => c.value), () => context.addCookies(cookies));
  // A cookie whose expiry has passed is not kept: the browser removes it (the usual way to
  // delete a cookie). Said, so the seed's example (expires 1790000000) does not vanish silently.
  const now = Date.now() / 1000;
  return { set: cookies.length, expired: body.cookies.filter((c) => c.expires !== undefined && c.expires > 0 && c.expires <= now).map((c) => c.name) };
}

/** Clears the cookies a request to `url` would carry, or every cookie with no `url`. */
export async function clearCookies(context: BrowserContext, url?: string): Promise<{ cleared: number }> {
  const doomed = await scrubbed("reading cookies", "failed", [], () => context.cookies(url));
  if (!url) {
    await scrubbed("clearing cookies", "failed", [], () => context.clearCookies());
    return { cleared: doomed.length };
  }
  for (const c of doomed) {
    await scrubbed("clearing cookies", "failed", [], () => context.clearCookies({ name: c.name, domain: c.domain, path: c.path }));
  }
  return { cleared: doomed.length };
}
